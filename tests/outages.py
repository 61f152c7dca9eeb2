"""Dependencies that fail for real, for the readiness probe's tests: PostgreSQL, the cache's
Redis or the broker's Redis at an address where nothing listens, a server that accepts a
connection and never answers, and a Redis that answers PING wrongly. Each is what an
outage looks like from a process (a refused or silent socket, a wrong reply), reached
through the settings the process reads, not by replacing the probe's own checks."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection


def wait_until(condition: Callable[[], bool], timeout: float = 10, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what or condition}")
        time.sleep(0.05)


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def database_at(port: int) -> Iterator[None]:
    """Connections opened within the block (the probe's thread opens one per probe) go to
    ``127.0.0.1:port``; the test's own open connection is not touched."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(connection.settings_dict, "HOST", "127.0.0.1")
        patch.setitem(connection.settings_dict, "PORT", str(port))
        yield


def cache_at(settings: Any, url: str) -> None:
    """The cache's Redis (``memory.cache.redis_client`` follows ``CACHES``) at ``url``."""
    settings.CACHE_URL = url
    settings.CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": url,
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.5, "SOCKET_TIMEOUT": 0.5},
        }
    }


# A Redis handshake as redis-py makes it (RESP3: HELLO answers a map), then ``+OK``.
REDIS_REPLIES = {b"HELLO": b"%1\r\n+proto\r\n:3\r\n"}


class Server:
    """A TCP server on a free local port. With ``replies`` it answers each command (a RESP
    array) by its name, ``+OK`` when the name is not there; without, it never answers.
    ``close()`` drops every connection it accepted."""

    def __init__(self, replies: dict[bytes, bytes] | None = None) -> None:
        self.replies = replies
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)  # accept() wakes up to see close()
        self.port = int(self.listener.getsockname()[1])
        self.closed = threading.Event()
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(client)
            if self.replies is not None:
                threading.Thread(target=self._answer, args=(client,), daemon=True).start()

    def _answer(self, client: socket.socket) -> None:
        replies = self.replies or {}
        try:
            while received := client.recv(65536):
                lines = received.split(b"\r\n")
                names = [lines[i + 2].upper() for i, line in enumerate(lines) if line[:1] == b"*"]
                client.sendall(b"".join(replies.get(name, b"+OK\r\n") for name in names))
        except OSError:
            return

    def close(self) -> None:
        self.closed.set()
        self.listener.close()
        for client in self.accepted:
            client.close()
        self.thread.join(5)


@contextmanager
def server(replies: dict[bytes, bytes] | None = None) -> Iterator[Server]:
    running = Server(replies)
    try:
        yield running
    finally:
        running.close()
