"""Loaded as a pytest plugin (``-p tests.environment``) before Django reads its settings:
test-run defaults that a real deployment must set itself.

When the suite runs in several processes (pytest-xdist, ``make test``), each process gets
its own Redis databases and var directory: the throttle's buckets are named by key ids,
which every process's test database hands out from 1, and some stories empty the cache
database or run a Celery worker that would take another process's tasks."""

import os
from pathlib import Path

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production")
_VAR = Path(__file__).resolve().parent.parent / "var" / "test"
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # gw0, gw1, … in a parallel run
if _WORKER:
    _INDEX = int(_WORKER.removeprefix("gw"))
    if _INDEX > 6:  # Redis has databases 0-15; 2-15 are used here, two a process
        raise RuntimeError("at most 7 test processes (pytest -n 7)")
    os.environ["MEMGOV_BROKER_REDIS_DB"] = str(2 + 2 * _INDEX)
    os.environ["MEMGOV_CACHE_REDIS_DB"] = str(3 + 2 * _INDEX)
    _VAR = _VAR / _WORKER
os.environ.setdefault("MEMGOV_VAR_DIR", str(_VAR))
