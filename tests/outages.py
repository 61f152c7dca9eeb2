"""Dependencies that fail for real: PostgreSQL, the cache's Redis or the broker's Redis at
an address where nothing listens, a server that accepts a connection and never answers, a
Redis that answers PING wrongly, and a proxy in front of a real Redis that holds some
commands back. Each is what an
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
    """The cache's Redis (``core.redis_client.redis_client`` follows ``CACHES``) at ``url``."""
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


class _Listener:
    """A TCP listener on a free local port whose thread hands each connection to
    ``accepted``; ``close()`` stops it and drops every socket it kept."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)  # accept() wakes up to see close()
        self.port = int(self.listener.getsockname()[1])
        self.closed = threading.Event()
        self.sockets: list[socket.socket] = []
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
            self.sockets.append(client)
            self.accepted(client)

    def accepted(self, client: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.closed.set()
        self.listener.close()
        for sock in self.sockets:
            sock.close()
        self.thread.join(5)


class Server(_Listener):
    """A TCP server on a free local port. With ``replies`` it answers each command (a RESP
    array) by its name, ``+OK`` when the name is not there; without, it never answers.
    ``close()`` drops every connection it accepted."""

    def __init__(self, replies: dict[bytes, bytes] | None = None) -> None:
        self.replies = replies
        super().__init__()

    def accepted(self, client: socket.socket) -> None:
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


@contextmanager
def server(replies: dict[bytes, bytes] | None = None) -> Iterator[Server]:
    running = Server(replies)
    try:
        yield running
    finally:
        running.close()


class DelayingProxy(_Listener):
    """A TCP proxy on a free local port to ``127.0.0.1:upstream`` that holds what a client
    sends for ``seconds`` when ``held(chunk)`` says so: a slow network or server, for
    those commands only."""

    def __init__(self, upstream: int, held: Callable[[bytes], bool], seconds: float) -> None:
        self.upstream, self.held, self.seconds = upstream, held, seconds
        super().__init__()

    def accepted(self, client: socket.socket) -> None:
        server = socket.create_connection(("127.0.0.1", self.upstream))
        self.sockets.append(server)
        for source, target, hold in ((client, server, True), (server, client, False)):
            copy = threading.Thread(target=self._copy, args=(source, target, hold), daemon=True)
            copy.start()

    def _copy(self, source: socket.socket, target: socket.socket, hold: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if hold and self.held(chunk):
                    time.sleep(self.seconds)
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            target.close()
