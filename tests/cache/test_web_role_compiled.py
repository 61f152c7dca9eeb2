"""The production web role parses HTTP with httptools and runs uvloop's event loop
(``config/workers.py``). Left to "auto", uvicorn falls back to pure-Python h11 and
asyncio's own loop without a word when those are missing, and the web role then answered
a quarter to two fifths fewer requests a second (bench/README.md, thirteenth round)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cache.conftest import ASGI_WORKERS, Gunicorn, RedisServer
from tests.conftest import needs

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (gunicorn's workers), from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # The command name in parentheses may hold spaces: the fields after it are fixed.
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # a process that ended while we looked
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_each_web_worker_runs_the_compiled_http_parser_and_event_loop(
    redis_server: RedisServer, django_db_setup: Any, world: Any
) -> None:
    server = Gunicorn(
        redis_server.url, app="config.asgi:application", GUNICORN_CMD_ARGS=ASGI_WORKERS
    )
    try:  # each worker sets up its loop and loads its HTTP protocol as it starts
        assert server.call("GET", "/api/v1/policy", world.keys["agent"])[0] == 200
        workers = _children(server.process.pid)
        mapped = [Path(f"/proc/{pid}/maps").read_text() for pid in workers]
    finally:
        server.stop()

    assert len(workers) == 2
    for libraries in mapped:
        assert "/httptools/parser/" in libraries
        assert "/uvloop/loop." in libraries
