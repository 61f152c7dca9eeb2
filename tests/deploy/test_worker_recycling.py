"""How often the web role replaces its workers (``deploy/gunicorn.conf.py``): each
replacement boots Django again while the other workers serve alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.deploy.support import DEPLOY, ROOT

READ = (
    "import json, runpy, sys; ns = runpy.run_path(sys.argv[1]); "
    "print(json.dumps({k: ns[k] for k in ('max_requests', 'max_requests_jitter')}))"
)


def _recycling(tmp_path: Path, **env: str) -> dict[str, int]:
    """The two settings as gunicorn reads them from the file, in a fresh interpreter
    (the file reads the environment when it loads)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GUNICORN_MAX_REQUESTS")}
    result = subprocess.run(  # noqa: S603 - our own interpreter and file
        [sys.executable, "-c", READ, str(DEPLOY / "gunicorn.conf.py")],
        cwd=ROOT,
        env={**clean, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        check=True,
    )
    settings: dict[str, int] = json.loads(result.stdout)
    return settings


def test_a_busy_worker_is_replaced_at_most_every_ten_minutes(tmp_path):
    settings = _recycling(tmp_path)

    # gunicorn adds up to the jitter to max_requests, so the soonest is max_requests
    # itself; it stays ten minutes even with the jitter taken off instead.
    without_jitter = settings["max_requests"] - settings["max_requests_jitter"]
    assert without_jitter / 1_000 >= 600  # seconds, at a thousand requests a second
    assert settings["max_requests_jitter"] > 0  # workers are not replaced together


def test_replacement_is_tuned_or_turned_off_from_the_environment(tmp_path):
    assert _recycling(tmp_path, GUNICORN_MAX_REQUESTS="0") == {
        "max_requests": 0,
        "max_requests_jitter": 0,
    }
    assert _recycling(
        tmp_path, GUNICORN_MAX_REQUESTS="50000", GUNICORN_MAX_REQUESTS_JITTER="7"
    ) == {"max_requests": 50_000, "max_requests_jitter": 7}
