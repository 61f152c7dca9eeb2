"""Under ASGI (the production web role) a request's signals, middleware and view run in
one hop to one of a few threads kept for requests (``config.asgi.OneHopASGIHandler``), in
WSGI's order, not back and forth between the event loop and a thread started for each
request."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.core import signals
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
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


def streamed(request: HttpRequest) -> StreamingHttpResponse:
    def parts() -> Any:
        for part in (b"one ", b"two"):
            seen.append(("streamed", threading.current_thread().name))
            yield part

    return StreamingHttpResponse(parts())


def _started(sender: Any, **kwargs: Any) -> None:
    seen.append(("started", threading.current_thread().name))


def _finished(sender: Any, **kwargs: Any) -> None:
    seen.append(("finished", threading.current_thread().name))


urlpatterns = [path("answer", answer), path("held", held), path("streamed", streamed)]


@pytest.fixture(autouse=True)
def _clean(settings: Any) -> Any:
    settings.ROOT_URLCONF = __name__
    seen.clear()
    released.clear()
    signals.request_started.connect(_started)
    signals.request_finished.connect(_finished)
    yield
    signals.request_started.disconnect(_started)
    signals.request_finished.disconnect(_finished)


def _steps(*only: str) -> list[str]:
    return [step for step, _ in seen if not only or step in only]


def _handler(threads: int) -> OneHopASGIHandler:
    middleware = ["tests.unit.test_asgi_handler.Recording"]
    with override_settings(MIDDLEWARE=middleware):
        return OneHopASGIHandler(threads=threads)


async def _get(
    handler: OneHopASGIHandler, route: str, *, leaves: bool = False
) -> tuple[int, bytes] | None:
    scope = {"type": "http", "method": "GET", "path": route, "headers": [], "query_string": b""}
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": b"", "more_body": False}
        if leaves:
            return {"type": "http.disconnect"}
        await asyncio.sleep(3600)  # no disconnect: the client waits for its answer
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        seen.append(("sent", message["type"]))
        sent.append(message)

    await handler(scope, receive, send)
    if not sent:
        return None
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
    assert _steps() == ["started", "request", "view", "response", "finished", "sent", "sent"]
    threads = {name for step, name in seen if step != "sent"}
    assert len(threads) == 1
    assert threads.pop().startswith("django-request-")


@pytest.mark.filterwarnings("error")  # Django warns when it reads a sync stream whole
def test_a_streamed_answer_is_sent_part_by_part_as_its_thread_reads_them_and_closed_after():
    handler = _handler(threads=2)

    assert _run(lambda: _get(handler, "/streamed")) == (200, b"one two")
    steps = _steps()
    assert steps[:4] == ["started", "request", "response", "sent"]
    assert steps[4:] == ["streamed", "sent", "streamed", "sent", "sent", "finished"]
    assert len({name for step, name in seen if step != "sent"}) == 1


def test_a_client_that_leaves_gets_nothing_and_its_request_still_finishes():
    handler = _handler(threads=1)
    threading.Timer(0.3, released.set).start()  # the view ends after the client left

    assert _run(lambda: _get(handler, "/held", leaves=True)) is None
    assert "sent" not in _steps()
    assert _steps("held", "finished")[:2] == ["held", "finished"]


def test_the_thread_that_finished_last_takes_the_next_request():
    handler = _handler(threads=4)

    async def one_after_another() -> None:
        for _ in range(3):
            await _get(handler, "/answer")

    _run(one_after_another)
    assert _steps("view") == ["view"] * 3
    assert len({name for step, name in seen if step == "view"}) == 1


def test_a_request_waits_while_every_kept_thread_is_busy():
    handler = _handler(threads=1)

    async def two_at_once() -> list[tuple[int, bytes] | None]:
        first = asyncio.create_task(_get(handler, "/held"))
        while not _steps("held"):  # the first request holds the only thread
            await asyncio.sleep(0.01)
        second = asyncio.create_task(_get(handler, "/answer"))
        await asyncio.sleep(0.2)
        waited = _steps("view") == []
        released.set()
        answers = [await first, await second]
        assert waited, "the second request ran while the only thread was busy"
        return answers

    assert _run(two_at_once) == [(200, b"released"), (200, b"ok")]
    assert len({name for step, name in seen if step != "sent"}) == 1
