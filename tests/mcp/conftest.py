"""A live Memgov for MCP sessions: the web role as deployed (``gunicorn config.wsgi`` with
``deploy/gunicorn.conf.py``: the REST API and ``/mcp``), or the ASGI application the
contract names (``uvicorn config.asgi:application``, ``live_asgi``), and a
``celery -A config worker``, all on the test database and on a private ``redis-server``
(broker and cache), so no other test run's worker takes their tasks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.cache.conftest import RedisServer, database_url, free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "var" / "test"
DEPLOYED = "deploy/gunicorn.conf.py"


@dataclass
class Live:
    base: str
    env: dict[str, str]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"

    def call(self, method: str, path: str, key: str | None, body: Any = None) -> tuple[int, Any]:
        """A plain HTTP call (the REST API, or a raw POST to /mcp)."""
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(  # noqa: S310 - our own loopback server
            f"{self.base}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers=headers,
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")


def _start(command: list[str], env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
    LOGS.mkdir(parents=True, exist_ok=True)
    with (LOGS / f"{name}.log").open("wb") as log:
        return subprocess.Popen(  # noqa: S603 - the project's own server and worker
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )


def _answers(live: Live, process: subprocess.Popen[bytes]) -> bool:
    assert process.poll() is None, "the web server exited; see var/test/mcp-*.log"
    try:
        with urllib.request.urlopen(f"{live.base}/healthz", timeout=2):  # noqa: S310
            return True
    except OSError:
        return False


Server = Callable[[int, dict[str, str]], tuple[list[str], dict[str, str]]]


def gunicorn_wsgi(port: int, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    command = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "-c", DEPLOYED]
    return command, {**env, "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_WORKERS": "2"}


def uvicorn_asgi(port: int, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    command = [sys.executable, "-m", "uvicorn", "config.asgi:application"]
    return [*command, "--host=127.0.0.1", f"--port={port}", "--workers=2"], env


@contextmanager
def serving(server: Server, name: str, django_db_blocker: Any) -> Iterator[Live]:
    redis = RedisServer()
    redis.start()
    port = free_port()
    with django_db_blocker.unblock():
        db_url = database_url()
    # The queue and the cache on their own databases, as README's stdio example and every
    # production process (outside DEBUG one database for both refuses to start).
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("CACHE_URL", "CELERY_BROKER_URL")},
        "DATABASE_URL": db_url,
        "REDIS_URL": f"{redis.url}/0",
        "CACHE_URL": f"{redis.url}/1",
        "SECRET_KEY": "test-only-secret-key-for-the-mcp-server",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DEBUG": "false",
        "EMAIL_URL": "dummy://",
        "MEMGOV_THROTTLE_RATE": "1000000/min",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    live = Live(base=f"http://127.0.0.1:{port}", env=env)
    command, server_env = server(port, env)
    web = _start(command, server_env, f"mcp-{name}-{port}")
    worker = _start(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "--without-mingle",
            "--without-gossip",
            "--loglevel=WARNING",
            "-n",
            f"mcp-{uuid.uuid4().hex[:8]}@%h",
        ],
        env,
        f"mcp-worker-{port}",
    )
    live.processes += [web, worker]
    try:
        wait_until(lambda: _answers(live, web), timeout=90, what=f"{name} to answer /healthz")
        yield live
    finally:
        for process in live.processes:
            process.terminate()
        for process in live.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        redis.stop()


@pytest.fixture(scope="module")
def live(django_db_setup: Any, django_db_blocker: Any) -> Iterator[Live]:
    with serving(gunicorn_wsgi, "gunicorn", django_db_blocker) as served:
        yield served


@pytest.fixture(scope="module")
def live_asgi(django_db_setup: Any, django_db_blocker: Any) -> Iterator[Live]:
    with serving(uvicorn_asgi, "uvicorn", django_db_blocker) as served:
        yield served
