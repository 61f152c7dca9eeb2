"""A webhook receiver for tests: a real HTTP server on a free loopback port that verifies
every delivery with the client package's ``verify_webhook`` (no Django), records it, and
answers the status codes a test scripts (then 200)."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memgov_client import WebhookVerificationError, verify_webhook


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    at: float
    verified_with: list[str]
    answered: int
    path: str = ""

    @property
    def event(self) -> dict[str, Any]:
        return dict(json.loads(self.body))


@dataclass
class Receiver:
    url: str = ""
    secrets: list[str] = field(default_factory=list)
    answers: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    delay: float = 0.0  # seconds before answering
    refuse_type: str = ""  # events of this type are always answered 400
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, headers: dict[str, str], body: bytes, path: str = "") -> int:
        verified = []
        for secret in self.secrets:
            try:
                verify_webhook(body, headers, secret)
            except WebhookVerificationError:
                continue
            verified.append(secret)
        with self.lock:
            answer = self.answers.pop(0) if self.answers else 200
            if self.refuse_type and f'"type":"{self.refuse_type}"' in body.decode():
                answer = 400
            self.received.append(Received(headers, body, time.monotonic(), verified, answer, path))
        time.sleep(self.delay)
        return answer

    def events(self, event_type: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            got = [r.event for r in self.received if r.answered == 200]
        return [e for e in got if event_type is None or e["type"] == event_type]

    def all(self) -> list[Received]:
        with self.lock:
            return list(self.received)


@contextmanager
def live_receiver(tls: ssl.SSLContext | None = None, host: str = "127.0.0.1") -> Iterator[Receiver]:
    """Listens on 127.0.0.1; ``host`` is the name in its URL (a test resolves it there),
    and with ``tls`` it speaks HTTPS."""
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            status = receiver.handle(headers, body, self.path)
            try:
                self.send_response(status)
            except OSError:
                return  # the sender gave up waiting
            if 300 <= status < 400:
                self.send_header("Location", receiver.url + "/moved")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    scheme = "https" if tls is not None else "http"
    receiver.url = f"{scheme}://{host}:{server.server_address[1]}/hooks/memgov"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Trickle:
    """A receiver that answers one byte of ``HTTP/1.1 200 OK`` at a time, ``interval``
    seconds apart, for ``length`` seconds: each read is quick, the whole answer is not."""

    url: str = ""
    interval: float = 0.3
    length: float = 60.0
    connections: list[float] = field(default_factory=list)  # when each was accepted
    finished: list[float] = field(default_factory=list)  # when each answer was complete
    stop: threading.Event = field(default_factory=threading.Event)


def _trickle_answer(trickle: Trickle, conn: socket.socket) -> None:
    with conn:
        conn.settimeout(5)
        try:
            conn.recv(65536)  # the request; the answer does not depend on it
            started = time.monotonic()
            head = b"HTTP/1.1 200 OK\r\nX-Slow: "
            for byte in range(len(head)):
                conn.sendall(head[byte : byte + 1])
                if trickle.stop.wait(trickle.interval):
                    return
            while time.monotonic() - started < trickle.length:
                conn.sendall(b"z")
                if trickle.stop.wait(trickle.interval):
                    return
            conn.sendall(b"\r\nContent-Length: 0\r\n\r\n")
            trickle.finished.append(time.monotonic())
        except OSError:
            return  # the sender hung up: what a deadline does


@contextmanager
def trickling_receiver(interval: float = 0.3, length: float = 60.0) -> Iterator[Trickle]:
    """A real TCP server on 127.0.0.1 that trickles its answer (issue 33, point 9)."""
    trickle = Trickle(interval=interval, length=length)
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    trickle.url = f"http://127.0.0.1:{server.getsockname()[1]}/hooks/slow"

    def serve() -> None:
        while not trickle.stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            trickle.connections.append(time.monotonic())
            threading.Thread(target=_trickle_answer, args=(trickle, conn), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield trickle
    finally:
        trickle.stop.set()
        thread.join(timeout=5)
        server.close()
