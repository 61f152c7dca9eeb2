"""Run every process of a Procfile and restart any that exits, until told to stop.

``make prod`` used honcho, which stops every process when one exits: one crashed worker
took the web server down with it (issue 36). Here a process that exits is started
again after a pause that doubles while it keeps failing quickly (1 s up to 30 s, back to
1 s once it has run a minute), and the others go on. Each line a role writes is printed
prefixed with its name (``worker.1 | …``), as honcho did. SIGINT or SIGTERM stops them all
(SIGTERM to each process group, SIGKILL after a grace period) and ends this.

Each role gets a PROMETHEUS_MULTIPROC_DIR of its own (scripts/metrics_dirs.py), emptied
when the role starts again and removed when this ends: two Celery workers on one machine
do not add up each other's samples, and no /tmp/memgov-metrics-* is left behind.

    python scripts/supervise.py deploy/Procfile
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

if not __package__:  # run as a file (make prod): the repository's packages importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts import metrics_dirs

FIRST_PAUSE, LONGEST_PAUSE, HEALTHY_AFTER, GRACE = 1.0, 30.0, 60.0, 30.0


@dataclass
class Role:
    name: str
    command: str
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    pause: float = FIRST_PAUSE
    restart_at: float = 0.0
    restarts: int = field(default=0)
    metrics: Path | None = None

    def start(self) -> None:
        if self.metrics is None:
            self.metrics = metrics_dirs.make_own(self.name)
        metrics_dirs.empty(self.metrics)  # a dead run's gauges would count as live
        self.process = subprocess.Popen(  # noqa: S602 - the Procfile's own shell lines
            self.command,
            shell=True,
            env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(self.metrics)},
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.started = time.monotonic()
        say(f"{self.name} started (pid {self.process.pid})")
        threading.Thread(target=self._relay, args=(self.process,), daemon=True).start()

    def _relay(self, process: subprocess.Popen[bytes]) -> None:
        """Each line of the role's output, prefixed with its name as honcho did."""
        for line in process.stdout or ():
            sys.stdout.write(f"{self.name}.1 | {line.decode(errors='replace')}")
            sys.stdout.flush()


def say(line: str) -> None:
    print(f"supervise: {line}", flush=True)


def read_procfile(path: Path) -> list[Role]:
    roles = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, command = line.split(":", 1)
            roles.append(Role(name.strip(), command.strip()))
    return roles


def supervise(roles: list[Role]) -> int:
    stopping = False

    def stop(signum: int, _: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for role in roles:
        role.start()
    while not stopping:
        now = time.monotonic()
        for role in roles:
            if role.process is None:
                if now >= role.restart_at:
                    role.restarts += 1
                    role.start()
                continue
            code = role.process.poll()
            if code is None:
                continue
            ran = now - role.started
            role.pause = FIRST_PAUSE if ran > HEALTHY_AFTER else min(role.pause * 2, LONGEST_PAUSE)
            role.restart_at = now + role.pause
            role.process = None
            say(f"{role.name} exited with {code} after {ran:.1f} s; again in {role.pause:g} s")
        time.sleep(0.2)
    return _stop_all(roles)


def _stop_all(roles: list[Role]) -> int:
    running = [r.process for r in roles if r.process is not None and r.process.poll() is None]
    for process in running:
        _signal_group(process, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    for process in running:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(process, signal.SIGKILL)
            process.wait()
    for role in roles:
        if role.metrics is not None:
            metrics_dirs.remove_own(role.metrics)
    say("stopped")
    return 0


def _signal_group(process: subprocess.Popen[bytes], number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, number)


if __name__ == "__main__":
    sys.exit(supervise(read_procfile(Path(sys.argv[1]))))
