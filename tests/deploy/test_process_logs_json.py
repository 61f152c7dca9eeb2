"""Issue 47, point 8: with MEMGOV_LOG_FORMAT=json every line a deployed process writes is
JSON, not only the application's. Live processes: gunicorn as deployed (its own lines:
start, workers booted, shutdown; and its access log when asked for, without the query
string), a Celery worker (no banner: one start line instead) and beat as the manifest
starts it. Before, gunicorn wrote ``[date] [pid] [INFO] Starting gunicorn …`` and Celery
its ASCII-art banner among the JSON lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.conftest import needs
from tests.deploy.kustomize_lite import build
from tests.deploy.live import Gunicorn, get, wait_for
from tests.deploy.support import ROOT
from tests.deploy.test_kubernetes import OVERLAY, pod_specs
from tests.integration.test_workflow_worker import _test_database_url, worker_environment

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]

# Celery's signal handler prints this straight to the terminal, outside logging; the
# worker's JSON line "worker_stop" says it too (operations/telemetry.py).
CELERY_SHUTDOWN_NOTICE = "worker: Warm shutdown (MainProcess)"


def json_lines(output: str, allowed: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every non-blank line as JSON (or one of ``allowed``); fails on any other."""
    lines = []
    for line in output.splitlines():
        if not line.strip() or line in allowed:
            continue
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"not a JSON line: {line!r}\n{output}") from None
    return lines


def _web_env(**more: str) -> dict[str, str]:
    return {
        "DATABASE_URL": _test_database_url(),
        "REDIS_URL": str(settings.REDIS_URL),
        "CACHE_URL": str(settings.CACHE_URL),
        "CELERY_BROKER_URL": str(settings.CELERY_BROKER_URL),
        "MEMGOV_LOG_FORMAT": "json",
        **more,
    }


def test_gunicorn_s_own_lines_and_its_access_log_are_json(tmp_path: Path):
    with Gunicorn(tmp_path / "web.log", _web_env(GUNICORN_ACCESS_LOG="-"), "--workers=1") as web:
        status, _, headers = get(f"{web.base}/api/v1/memories?q=secret-in-the-query")
        assert status == 401
    lines = json_lines(web.output())

    own = [line["message"] for line in lines if line["logger"] == "gunicorn.error"]
    assert any(m.startswith("Starting gunicorn") for m in own), own
    assert any(m.startswith("Booting worker with pid") for m in own), own
    assert "Shutting down: Master" in own
    [access] = [line for line in lines if line.get("event") == "access"]
    assert access["method"] == "GET"
    assert access["path"] == "/api/v1/memories"
    assert access["status"] == 401
    assert access["request_id"] == headers["X-Request-ID"]
    assert "secret-in-the-query" not in web.output()


def test_without_an_access_log_gunicorn_writes_no_access_lines(tmp_path: Path):
    with Gunicorn(tmp_path / "web.log", _web_env(), "--workers=1") as web:
        assert get(f"{web.base}/api/v1/memories")[0] == 401
    lines = json_lines(web.output())

    assert not [line for line in lines if line.get("event") == "access"]
    assert [line["route"] for line in lines if line.get("event") == "request"] == [
        "/api/v1/memories"
    ]


def _run_until(
    command: list[str], env: dict[str, str], log: Path, said: str
) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603 - our own worker and beat
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_for(said, lambda: said in log.read_text(errors="replace"), timeout=90)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    return process


def test_a_celery_worker_logs_json_and_no_banner(tmp_path: Path):
    env = {**worker_environment(), "MEMGOV_LOG_FORMAT": "json", "MEMGOV_VAR_DIR": str(tmp_path)}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "webhooks"]
    command += ["-n", "json@%h", "--concurrency", "1", "--without-mingle", "--without-gossip"]
    log = tmp_path / "worker.log"

    _run_until([*command, "--loglevel", "INFO"], env, log, " ready.")

    output = log.read_text(errors="replace")
    lines = json_lines(output, allowed=(CELERY_SHUTDOWN_NOTICE,))
    [start] = [line for line in lines if line.get("event") == "worker_start"]
    assert start["node"] == f"json@{os.uname().nodename}"
    assert start["queues"] == ["webhooks"]
    assert start["concurrency"] == 1
    assert [line["how"] for line in lines if line.get("event") == "worker_stop"] == ["warm"]
    assert "-------------- " not in output  # the banner's art


def test_beat_as_the_manifest_starts_it_logs_only_json(tmp_path: Path):
    [beat] = pod_specs(build(OVERLAY))["memgov-beat"]["containers"]
    env = {**worker_environment(), "MEMGOV_LOG_FORMAT": "json", "MEMGOV_VAR_DIR": str(tmp_path)}
    env["SECRET_KEY"] = "test-only-secret-key-for-beat"
    command = [sys.executable, "-m", *beat["command"]]
    log = tmp_path / "beat.log"

    _run_until(command, env, log, "beat starting")

    lines = json_lines(log.read_text(errors="replace"))
    assert [line["scheduler"] for line in lines if line.get("event") == "beat_start"] == [
        "RedisScheduler"
    ]
