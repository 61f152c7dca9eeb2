"""A webhook receiver for tests: a real HTTP server on a free loopback port that verifies
every delivery with the client package's ``verify_webhook`` (no Django), records it, and
answers the status codes a test scripts (then 200)."""

from __future__ import annotations

import json
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
def live_receiver() -> Iterator[Receiver]:
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
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/memgov"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
