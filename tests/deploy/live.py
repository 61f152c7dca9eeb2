"""Live processes for the outage stories: gunicorn as deployed, and a TCP relay in front of
PostgreSQL that a test can cut to play a database outage."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.deploy.support import ROOT


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(what: str, condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


def get(
    url: str, timeout: float = 30.0, headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str]]:
    """Status, body and headers of a GET (an HTTP error status is an answer too)."""
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 - loopback only
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


def timed_get(
    url: str, timeout: float = 30.0, headers: dict[str, str] | None = None
) -> tuple[float, int, bytes]:
    started = time.monotonic()
    status, body, _ = get(url, timeout, headers)
    return time.monotonic() - started, status, body


class Relay:
    """Forwards TCP from a local port to ``target``. ``cut()`` is the outage: open
    connections are dropped and new ones are accepted by the kernel but never answered
    (a host that is gone, not one that refuses). ``mend()`` ends it."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.port = int(self.listener.getsockname()[1])
        self._cut = threading.Event()
        self._stopped = threading.Event()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._lock = threading.Lock()
        self._refusing = False
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def url(self, database_url: str) -> str:
        parts = urlsplit(database_url)
        auth = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        return parts._replace(netloc=f"{auth}127.0.0.1:{self.port}").geturl()

    def _accept(self, listener: socket.socket) -> None:
        while not self._stopped.is_set() and listener.fileno() != -1:
            if self._cut.is_set():
                time.sleep(0.05)  # leave new connections in the backlog, unanswered
                continue
            try:
                listener.settimeout(0.1)
                client, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(a, selectors.EVENT_READ, b)
            selector.register(b, selectors.EVENT_READ, a)
            with contextlib.suppress(OSError, ValueError):
                while not self._cut.is_set():
                    for key, _ in selector.select(timeout=0.1):
                        data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                        if not data:
                            return
                        key.data.sendall(data)
        for sock in (a, b):
            with contextlib.suppress(OSError):
                sock.close()

    def cut(self, *, refuse: bool = False) -> None:
        """Newest connections first: a Celery worker's subscriptions are newer than its
        BRPOP's, and losing them first is what crashed a worker (issue 47). ``refuse``:
        new connections are refused, as by a stopped Redis, not left unanswered."""
        self._cut.set()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in reversed(pairs):
            for sock in pair:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        if refuse and not self._refusing:
            self._refusing = True
            self.listener.close()

    def mend(self) -> None:
        if self._refusing:
            self._refusing = False
            self.listener = socket.create_server(("127.0.0.1", self.port), backlog=256)
            threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()
        self._cut.clear()

    def close(self) -> None:
        self._stopped.set()
        self.cut()
        self.listener.close()


class Gunicorn:
    """``gunicorn config.wsgi -c deploy/gunicorn.conf.py``, as the image runs it, on a free
    web port and a free probe port."""

    def __init__(self, log: Path, env: dict[str, str], *args: str) -> None:
        self.port, self.probe_port = free_port(), free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.probes = f"http://127.0.0.1:{self.probe_port}"
        self.log = log
        command = [sys.executable, "-m", "gunicorn", "config.wsgi:application"]
        command += ["-c", "deploy/gunicorn.conf.py", f"--bind=127.0.0.1:{self.port}", *args]
        with log.open("wb") as out:
            self.process = subprocess.Popen(  # noqa: S603 - the project's own server
                command,
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={
                    **os.environ,
                    "SECRET_KEY": "test-only-secret-key-for-gunicorn",
                    "DEBUG": "false",
                    "MEMGOV_PROBE_PORT": str(self.probe_port),
                    "MEMGOV_THROTTLE_RATE": "1000000/min",
                    "MEMGOV_TENANT_MAX_IN_FLIGHT": "0",
                    **env,
                },
                start_new_session=True,
            )
        wait_for("gunicorn's probe port", self._answers_probes)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def _answers_probes(self) -> bool:
        assert self.process.poll() is None, self.output()
        try:
            return get(f"{self.probes}/healthz", timeout=1)[0] == 200
        except OSError:
            return False

    def signal(self, number: int) -> None:
        os.kill(self.process.pid, number)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def __enter__(self) -> Gunicorn:
        return self

    def __exit__(self, *_: Any) -> None:
        self.stop()
