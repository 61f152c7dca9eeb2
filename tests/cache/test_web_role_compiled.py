"""The production web role parses HTTP with httptools and runs uvloop's event loop
(``config/workers.py``). Left to "auto", uvicorn falls back to pure-Python h11 and
asyncio's own loop without a word when those are missing, and the web role then answered
a quarter to two fifths fewer requests a second (bench/README.md, thirteenth round)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cache.conftest import ASGI_WORKERS, Gunicorn, RedisServer, wait_until
from tests.conftest import child_processes, needs

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]


def _maps(pid: int) -> str:
    """What the process has mapped: its executable and every shared library it loaded."""
    return Path(f"/proc/{pid}/maps").read_text()


def test_each_web_worker_runs_the_compiled_http_parser_and_event_loop(
    redis_server: RedisServer, django_db_setup: Any, world: Any
) -> None:
    server = Gunicorn(
        redis_server.url, app="config.asgi:application", GUNICORN_CMD_ARGS=ASGI_WORKERS
    )
    try:
        assert server.call("GET", "/api/v1/policy", world.keys["agent"])[0] == 200
        workers = child_processes(server.process.pid)
        # One worker answering says nothing of the other, which may still be importing
        # Django. A worker loads the application, sets up its loop, then loads its HTTP
        # protocol last, just before it serves: wait for that (with h11 it never comes).
        wait_until(
            lambda: all("/httptools/parser/" in _maps(pid) for pid in workers),
            what="each web worker to load its HTTP protocol",
        )
        mapped = [_maps(pid) for pid in workers]
    finally:
        server.stop()

    assert len(workers) == 2
    for libraries in mapped:
        assert "/httptools/parser/" in libraries
        assert "/uvloop/loop." in libraries
