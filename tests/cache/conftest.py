"""A Redis server of the tests' own (so it can be stopped, restarted and emptied without
touching anyone else's data), gunicorn with 2 workers against the test database, and
HTTP readers that record what every resolve answered and when."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from django.db import connection

from core import redis_client
from memory import generations

ROOT = Path(__file__).resolve().parents[2]
CACHE_DB, BROKER_DB = 1, 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(condition: Callable[[], bool], timeout: float = 30, what: str = "") -> None:
    """Poll until ``condition`` holds; a test that never gets there fails, it never hangs."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what or condition}")
        time.sleep(0.02)


class RedisServer:
    """``redis-server`` on a spare port, without persistence: a restart comes back empty."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def client(self, db: int = CACHE_DB) -> redis.Redis:
        return redis.Redis(port=self.port, db=db, socket_timeout=2)

    def entries(self, subject: str) -> list[bytes]:
        """The keys of every cached answer about ``subject``, whatever its generation."""
        return list(self.client().scan_iter(f"mg:res:*:{subject}:*"))

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is not installed"
        command = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "no", "--daemonize", "no"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)  # noqa: S603
        wait_until(self._answers, what="redis-server to start")

    def _answers(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.ConnectionError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def ensure_running(self) -> None:
        if self.process is None:
            self.start()


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    """The personas' PBKDF2 hashes would cost seconds per test and say nothing here."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def private_redis(
    redis_server: RedisServer, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> RedisServer:
    """This process's cache on the private server, with a clean slate of process state."""
    redis_server.ensure_running()
    redis_server.client().flushdb()
    settings.CACHE_URL = f"{redis_server.url}/{CACHE_DB}"
    settings.CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": settings.CACHE_URL,
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.5, "SOCKET_TIMEOUT": 0.5},
        }
    }
    settings.MEMGOV_RESOLVE_CACHE = True
    # New settings: no cooldown of another server applies. What another test left pending
    # (a generation move that failed) moves on now, on this server.
    generations.bump(())
    monkeypatch.setattr(redis_client, "stats", Counter())
    return redis_server


def database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class Gunicorn:
    """The web role as deployed (``gunicorn config.wsgi`` with ``deploy/gunicorn.conf.py``:
    gthread workers, the MCP server at ``/mcp``), 2 workers by default, on the test
    database and the private Redis."""

    def __init__(
        self, redis_url: str, workers: int = 2, app: str = "config.wsgi:application", **env: str
    ) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        logs = ROOT / "var" / "test"
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"gunicorn-{self.port}.log"
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - open while gunicorn runs
        command = [sys.executable, "-m", "gunicorn", app, "-c", "deploy/gunicorn.conf.py"]
        command += [f"--workers={workers}", f"--bind=127.0.0.1:{self.port}", "--log-level=warning"]
        self.process = subprocess.Popen(  # noqa: S603 - the project's own server
            command,
            cwd=ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={
                **os.environ,
                "DATABASE_URL": database_url(),
                "REDIS_URL": redis_url,
                "CACHE_URL": f"{redis_url}/{CACHE_DB}",
                "CELERY_BROKER_URL": f"{redis_url}/{BROKER_DB}",
                "SECRET_KEY": "test-only-secret-key-for-gunicorn",
                "ALLOWED_HOSTS": "127.0.0.1,localhost",
                "DEBUG": "false",
                "MEMGOV_THROTTLE_RATE": "1000000/min",
                **env,
            },
        )
        wait_until(self._ready, timeout=60, what="gunicorn to answer /healthz")

    def _ready(self) -> bool:
        assert self.process.poll() is None, "gunicorn exited; see var/test/gunicorn-*.log"
        try:
            with urllib.request.urlopen(f"{self.base}/healthz", timeout=2):  # noqa: S310
                return True
        except OSError:
            return False

    def stop(self) -> None:
        """Stop it; its log is kept only when it did not start (see ``_ready``)."""
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()
        self.log_path.unlink()

    def call(self, method: str, path: str, key: str, body: Any = None, **headers: str) -> Any:
        request = urllib.request.Request(  # noqa: S310 - our own loopback server
            f"{self.base}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
            | headers,
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def resolve(self, key: str, body: dict[str, Any]) -> tuple[int, Any]:
        status, answer = self.call("POST", "/api/v1/resolve", key, body)
        return int(status), answer


@pytest.fixture(scope="module")
def gunicorn_server(
    redis_server: RedisServer, django_db_setup: Any, django_db_blocker: Any
) -> Iterator[Gunicorn]:
    server = Gunicorn(redis_server.url)
    yield server
    server.stop()


@dataclass
class Read:
    started: float
    ended: float
    status: int
    answer: Any


@dataclass
class Readers:
    """Threads that resolve continuously; every answer is kept with its start and end."""

    server: Gunicorn
    key: str
    body: dict[str, Any]
    threads: int = 4
    reads: list[Read] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _workers: list[threading.Thread] = field(default_factory=list)

    def __enter__(self) -> Readers:
        for _ in range(self.threads):
            worker = threading.Thread(target=self._run, daemon=True)
            worker.start()
            self._workers.append(worker)
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            status, answer = self.server.resolve(self.key, self.body)
            self.reads.append(Read(started, time.monotonic(), status, answer))

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for worker in self._workers:
            worker.join(timeout=30)

    def started_after(self, moment: float) -> list[Read]:
        return [r for r in list(self.reads) if r.started > moment]

    def wait_for(self, count: int, after: float = 0.0) -> None:
        wait_until(
            lambda: len(self.started_after(after)) >= count, what=f"{count} reads after {after}"
        )
