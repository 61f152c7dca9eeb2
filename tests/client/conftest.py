"""The client against a live Memgov: pytest-django's ``live_server`` (a real HTTP server
in a thread of this process, on the test database), the personas of ``world``, and httpx
transports that play a bad network or a failing gateway in front of it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from memgov_client import AsyncMemgov, Memgov, RetryPolicy
from tests.conftest import World


@dataclass
class Sent:
    """What reached the wire: method, path, Idempotency-Key and the status that came back."""

    method: str
    path: str
    idempotency_key: str | None
    status: int | None


class Recording(httpx.BaseTransport):
    """Passes every request to the real transport and writes down what happened."""

    def __init__(self, inner: httpx.BaseTransport | None = None) -> None:
        self.inner = inner or httpx.HTTPTransport()
        self.sent: list[Sent] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        self.sent.append(
            Sent(
                request.method,
                request.url.path,
                request.headers.get("Idempotency-Key"),
                response.status_code,
            )
        )
        return response

    def close(self) -> None:
        self.inner.close()


class DropsFirstAnswer(Recording):
    """The server handles the first request, then the connection breaks before its answer
    arrives (a proxy restart, a lost packet): the caller cannot know it was handled."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if len(self.sent) == 1:
            response.read()
            response.close()
            raise httpx.ReadError("connection reset before the answer arrived", request=request)
        return response


class FailingGateway(Recording):
    """A gateway in front of Memgov that answers the first requests itself with these
    statuses (never reaching Memgov), then passes requests through."""

    def __init__(self, statuses: list[int]) -> None:
        super().__init__()
        self.statuses = list(statuses)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.statuses:
            status = self.statuses.pop(0)
            self.sent.append(Sent(request.method, request.url.path, None, status))
            return httpx.Response(status, text="upstream unavailable", request=request)
        return super().handle_request(request)


@dataclass
class Sleeps:
    """An injectable ``sleep`` that records each wait and does not block."""

    waited: list[float] = field(default_factory=list)
    then: Callable[[], None] = lambda: None

    def __call__(self, seconds: float) -> None:
        self.waited.append(seconds)
        self.then()

    async def asleep(self, seconds: float) -> None:
        self(seconds)


@pytest.fixture
def server(live_server: Any, world: World) -> str:
    return str(live_server.url)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def connect(server: str, world: World, sleeps: Sleeps) -> Iterator[Callable[..., Memgov]]:
    """``connect("rita")``: a client with that persona's key against the live server."""
    opened: list[Memgov] = []

    def make(name: str, transport: httpx.BaseTransport | None = None, **options: Any) -> Memgov:
        options.setdefault("retry", RetryPolicy(attempts=4, backoff=0.01))
        client = Memgov(server, world.keys[name], transport=transport, sleep=sleeps, **options)
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()


@pytest.fixture
def connect_async(server: str, world: World, sleeps: Sleeps) -> Callable[..., AsyncMemgov]:
    def make(name: str, **options: Any) -> AsyncMemgov:
        return AsyncMemgov(server, world.keys[name], sleep=sleeps.asleep, **options)

    return make
