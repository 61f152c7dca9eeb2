"""Celery and the cache share one Redis server, never one database number: emptying the
cache must not drop queued tasks, and the broker's keys are not cache entries."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHOW = (
    "from config import settings as s;"
    "print(s.CACHES['default']['LOCATION']);"
    "print(s.CELERY_BROKER_URL)"
)


def _settings(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMGOV_")}
    return subprocess.run(  # noqa: S603 - our own settings module, read in a fresh process
        [sys.executable, "-c", SHOW],
        cwd=ROOT,
        env={**clean, "SECRET_KEY": "x", "REDIS_URL": "redis://127.0.0.1:6379/0", **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_cache_and_the_broker_use_different_databases_of_one_redis_server():
    shown = _settings()

    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["redis://127.0.0.1:6379/1", "redis://127.0.0.1:6379/0"]


def test_the_database_numbers_can_be_chosen_apart():
    shown = _settings(MEMGOV_CACHE_REDIS_DB="8", MEMGOV_BROKER_REDIS_DB="9")

    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["redis://127.0.0.1:6379/8", "redis://127.0.0.1:6379/9"]


def test_settings_refuse_one_database_number_for_both():
    shown = _settings(MEMGOV_CACHE_REDIS_DB="3", MEMGOV_BROKER_REDIS_DB="3")

    assert shown.returncode != 0
    assert "MEMGOV_CACHE_REDIS_DB and MEMGOV_BROKER_REDIS_DB must differ" in shown.stderr
