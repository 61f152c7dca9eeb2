"""Under ASGI (the production web role) a request's middleware and view run in one hop to
one of a few threads kept for requests (``config.asgi.OneHopASGIHandler``), not back and
forth between the event loop and a thread started for each request."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import override_settings
from django.urls import path
from django.utils.deprecation import MiddlewareMixin

from config.asgi import OneHopASGIHandler

seen: list[tuple[str, str]] = []
released = threading.Event()


class Recording(MiddlewareMixin):
    """Django's own middleware is written like this: under an async chain each of its
    hooks ran through ``sync_to_async``."""

    def process_request(self, request: HttpRequest) -> None:
        seen.append(("request", threading.current_thread().name))

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        seen.append(("response", threading.current_thread().name))
        return response


def answer(request: HttpRequest) -> HttpResponse:
    seen.append(("view", threading.current_thread().name))
    return HttpResponse(b"ok")


def held(request: HttpRequest) -> HttpResponse:
    seen.append(("held", threading.current_thread().name))
    released.wait(timeout=10)
    return HttpResponse(b"released")


urlpatterns = [path("answer", answer), path("held", held)]


@pytest.fixture(autouse=True)
def _clean(settings: Any) -> None:
    settings.ROOT_URLCONF = __name__
    seen.clear()
    released.clear()


def _handler(threads: int) -> OneHopASGIHandler:
    middleware = ["tests.unit.test_asgi_handler.Recording"]
    with override_settings(MIDDLEWARE=middleware):
        return OneHopASGIHandler(threads=threads)


async def _get(handler: OneHopASGIHandler, route: str) -> tuple[int, bytes]:
    scope = {"type": "http", "method": "GET", "path": route, "headers": [], "query_string": b""}
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.sleep(3600)  # no disconnect: the client waits for its answer
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await handler(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], body


def _run(main: Callable[[], Any]) -> Any:
    # In a thread of its own: Playwright's sync API (the browser tests) leaves an event
    # loop running in the main thread.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, main()).result()


def test_a_request_runs_its_middleware_and_view_in_one_kept_thread():
    handler = _handler(threads=2)

    assert not asyncio.iscoroutinefunction(handler._middleware_chain)  # type: ignore[attr-defined]
    assert _run(lambda: _get(handler, "/answer")) == (200, b"ok")
    assert [step for step, _ in seen] == ["request", "view", "response"]
    threads = {name for _, name in seen}
    assert len(threads) == 1
    assert threads.pop().startswith("django-request-")


def test_the_thread_that_finished_last_takes_the_next_request():
    handler = _handler(threads=4)

    async def one_after_another() -> None:
        for _ in range(3):
            await _get(handler, "/answer")

    _run(one_after_another)
    assert len({name for step, name in seen if step == "view"}) == 1


def test_a_request_waits_while_every_kept_thread_is_busy():
    handler = _handler(threads=1)

    async def two_at_once() -> list[tuple[int, bytes]]:
        first = asyncio.create_task(_get(handler, "/held"))
        while not seen:  # the first request holds the only thread
            await asyncio.sleep(0.01)
        second = asyncio.create_task(_get(handler, "/answer"))
        await asyncio.sleep(0.2)
        waited = [step for step, _ in seen if step == "view"] == []
        released.set()
        answers = [await first, await second]
        assert waited, "the second request ran while the only thread was busy"
        return answers

    assert _run(two_at_once) == [(200, b"released"), (200, b"ok")]
    assert len({name for _, name in seen}) == 1
