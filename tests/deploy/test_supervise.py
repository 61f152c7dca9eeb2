"""Issue 36, point 10: ``make prod`` supervises its roles (scripts/supervise.py). A role
that exits is started again and the others go on; SIGTERM stops every one of them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.deploy.live import wait_for
from tests.deploy.support import ROOT


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.split(") ", 1)[1][0] != "Z"


def test_a_role_that_dies_is_restarted_and_the_others_go_on(tmp_path):
    runs, steady_pid = tmp_path / "runs", tmp_path / "steady.pid"
    procfile = tmp_path / "Procfile"
    procfile.write_text(
        f"steady: echo $$ > {steady_pid}; exec sleep 300\ncrashy: echo run >> {runs}; exit 3\n"
    )
    supervisor = subprocess.Popen(  # noqa: S603 - the project's own script
        [sys.executable, "scripts/supervise.py", str(procfile)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for("the steady role", steady_pid.exists, timeout=10)
        wait_for(
            "the crashing role's third run",
            lambda: runs.exists() and len(runs.read_text().split()) >= 3,
            timeout=20,
        )
        pid = int(steady_pid.read_text())

        assert _alive(pid)  # never restarted: the crash did not touch it
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=20) == 0
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
    output = supervisor.stdout.read() if supervisor.stdout else ""
    assert "crashy exited with 3" in output
    assert not _alive(pid)


def test_make_prod_runs_the_procfile_under_the_supervisor():
    makefile = (ROOT / "Makefile").read_text()
    prod = makefile.split("\nprod:", 1)[1].split("\n\n", 1)[0]

    assert "scripts/supervise.py deploy/Procfile" in prod
    assert "honcho" not in prod
