"""Every process of a deployment reads its Redis databases from the URLs as written, so a
stdio MCP server started with the web role's REDIS_URL sees the web role's invalidations."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHOW = (
    "from config import settings as s;"
    "print(s.CACHES['default'].get('LOCATION'));"
    "print(s.CELERY_BROKER_URL)"
)
NAMES = ("REDIS_URL", "CACHE_URL", "CELERY_BROKER_URL")


def _settings(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMGOV_") and k not in NAMES}
    return subprocess.run(  # noqa: S603 - our own settings module, read in a fresh process
        [sys.executable, "-c", SHOW],
        cwd=ROOT,
        env={**clean, "SECRET_KEY": "x", **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_database_named_in_redis_url_is_the_one_the_cache_and_the_broker_use():
    shown = _settings(REDIS_URL="redis://127.0.0.1:6379/5", DEBUG="true")  # prod refuses it

    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["redis://127.0.0.1:6379/5", "redis://127.0.0.1:6379/5"]


def test_cache_url_and_broker_url_keep_the_cache_apart_from_the_queue():
    shown = _settings(
        REDIS_URL="redis://127.0.0.1:6379/0",
        CACHE_URL="redis://127.0.0.1:6379/8",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/9",
    )

    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["redis://127.0.0.1:6379/8", "redis://127.0.0.1:6379/9"]


def test_a_process_that_still_sets_the_old_database_numbers_refuses_to_start():
    shown = _settings(REDIS_URL="redis://127.0.0.1:6379/5", MEMGOV_CACHE_REDIS_DB="1")

    assert shown.returncode != 0
    assert "MEMGOV_CACHE_REDIS_DB is no longer read: name the database in CACHE_URL" in (
        shown.stderr
    )


def test_a_cache_url_that_is_not_redis_refuses_to_start():
    shown = _settings(CACHE_URL="memcached://127.0.0.1:11211")

    assert shown.returncode != 0
    assert "CACHE_URL (or REDIS_URL) must be a redis://" in shown.stderr


def test_without_redis_the_cache_is_the_process_s_own_and_the_broker_a_folder():
    shown = _settings()

    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["None", "filesystem://"]
