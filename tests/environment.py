"""Loaded as a pytest plugin (``-p tests.environment``) before Django reads its settings:
test-run defaults that a real deployment must set itself.

When the suite runs in several processes (pytest-xdist, ``make test``), each process gets
its own Redis databases (``CACHE_URL``, ``CELERY_BROKER_URL``) and var directory: the
throttle's buckets are named by key ids, which every process's test database hands out
from 1, and some stories empty the cache database or run a Celery worker that would take
another process's tasks. A single process keeps URLs it was given."""

import os
from pathlib import Path

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production")
# Outside DEBUG a process without EMAIL_URL refuses to start (config/settings.py); tests
# and the servers they start keep mail in memory (pytest-django's outbox) or drop it.
os.environ.setdefault("EMAIL_URL", "locmem://")
# Semantic retrieval's model costs seconds of CPU in every process that loads it (each
# test process, server and worker child): off unless a test turns it on (tests/semantic,
# the canary), which keeps the suite within CI's time.
os.environ.setdefault("MEMGOV_SEMANTIC", "false")
_VAR = Path(__file__).resolve().parent.parent / "var" / "test"
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # gw0, gw1, … in a parallel run
_INDEX = int(_WORKER.removeprefix("gw")) if _WORKER else 0
if _INDEX > 6:  # Redis has databases 0-15; 2-15 are used here, two a process
    raise RuntimeError("at most 7 test processes (pytest -n 7)")
_REDIS_URL = os.environ.get("REDIS_URL", "").rstrip("/")
if _REDIS_URL:
    # Apart from the URL's own database: a story empties the cache or purges the queue.
    _SERVER = _REDIS_URL.rsplit("/", 1)[0] if _REDIS_URL.count("/") > 2 else _REDIS_URL
    _own = {"CELERY_BROKER_URL": 2 + 2 * _INDEX, "CACHE_URL": 3 + 2 * _INDEX}
    for _name, _db in _own.items():
        if _WORKER or _name not in os.environ:
            os.environ[_name] = f"{_SERVER}/{_db}"
if _WORKER:
    _VAR = _VAR / _WORKER
os.environ.setdefault("MEMGOV_VAR_DIR", str(_VAR))
