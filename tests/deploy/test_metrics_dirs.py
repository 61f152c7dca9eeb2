"""No /tmp/memgov-metrics-* is left behind (issue 36, point 13): gunicorn removes the
directory it made for its workers' samples when it exits, and one killed before it could
(SIGKILL, the OOM killer) is removed by the next server that starts, never one a running
server still uses (scripts/metrics_dirs.py)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.deploy.live import Gunicorn


def _metrics_dirs(tmp_path: Path) -> set[Path]:
    return set(tmp_path.glob("memgov-metrics-*"))


def test_a_killed_servers_metrics_directory_goes_when_the_next_server_starts(tmp_path):
    env = {"TMPDIR": str(tmp_path)}  # where the servers make their directories
    killed = Gunicorn(tmp_path / "killed.log", env, "--workers=1", "--threads=2")
    [left] = _metrics_dirs(tmp_path)
    running = Gunicorn(tmp_path / "running.log", env, "--workers=1", "--threads=2")
    [in_use] = _metrics_dirs(tmp_path) - {left}
    try:
        # Given one server killed outright, with no chance to remove its directory.
        os.killpg(killed.process.pid, signal.SIGKILL)
        killed.process.wait()
        assert left.is_dir()

        # When another starts, the dead one's directory goes; the running one's stays.
        with Gunicorn(tmp_path / "next.log", env, "--workers=1", "--threads=2"):
            remaining = _metrics_dirs(tmp_path)
            assert left not in remaining
            assert in_use in remaining and len(remaining) == 2  # and the new server's
    finally:
        running.stop()

    # And servers that stop normally remove their own.
    assert _metrics_dirs(tmp_path) == set()
