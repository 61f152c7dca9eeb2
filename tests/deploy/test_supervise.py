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


def _supervise(procfile: Path, tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(  # noqa: S603 - the project's own script
        [sys.executable, "scripts/supervise.py", str(procfile)],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},  # its metrics directories go here
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _metrics_dirs(tmp_path: Path) -> set[Path]:
    return set(tmp_path.glob("memgov-metrics-*"))


def test_each_role_records_metrics_in_its_own_directory_and_none_is_left_behind(tmp_path):
    # Two workers sharing one directory would each serve the other's samples as theirs.
    procfile = tmp_path / "Procfile"
    procfile.write_text(
        "".join(
            f"{role}: echo $$ > {tmp_path}/{role}.pid; "
            f"echo $PROMETHEUS_MULTIPROC_DIR > {tmp_path}/{role}.dir; exec sleep 300\n"
            for role in ("worker", "webhooks")
        )
    )
    first = _supervise(procfile, tmp_path)
    wait_for("both roles", lambda: len(list(tmp_path.glob("*.dir"))) == 2, timeout=10)
    given = {Path((tmp_path / f"{r}.dir").read_text().strip()) for r in ("worker", "webhooks")}

    assert len(given) == 2 and given == _metrics_dirs(tmp_path)
    assert all(path.is_dir() for path in given)

    # When the supervisor is killed outright (no chance to clean up), its directories stay...
    first.kill()
    first.wait()
    for pid_file in tmp_path.glob("*.pid"):  # its roles, left running, go as well
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
    for dir_file in tmp_path.glob("*.dir"):
        dir_file.unlink()
    assert _metrics_dirs(tmp_path) == given

    # ...until the next supervisor starts: it removes them, as nobody holds them any more.
    second = _supervise(procfile, tmp_path)
    try:
        wait_for("both roles again", lambda: len(list(tmp_path.glob("*.dir"))) == 2, timeout=10)
        again = _metrics_dirs(tmp_path)
        assert not again & given and len(again) == 2
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=20) == 0
    finally:
        if second.poll() is None:
            second.kill()

    # And a supervisor that stops normally removes its own.
    assert _metrics_dirs(tmp_path) == set()
