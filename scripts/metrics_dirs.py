"""Directories for Prometheus' multi-process samples (PROMETHEUS_MULTIPROC_DIR), made in
the temporary directory and never left behind.

A process tree that records samples in several processes (gunicorn's workers, a Celery
worker's pool) gives them one directory of its own. Its owner holds an exclusive
``flock`` on the ``owner`` file inside for as long as it runs, and removes the directory
when it exits; one killed before it could is found by the next owner that starts: nobody
holds its lock any more, so it is removed then. A directory without an ``owner`` file is
not one of these (or is being made) and is left alone.

Plain standard library, imported by deploy/gunicorn.conf.py before anything imports
prometheus_client (which reads PROMETHEUS_MULTIPROC_DIR once, at import)."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "memgov-metrics-"
OWNER = "owner"
_held: dict[Path, int] = {}  # directory -> the descriptor holding its lock


def make_own(label: str) -> Path:
    """A new, empty directory owned by this process, after removing abandoned ones."""
    sweep()
    path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{label}-"))
    descriptor = os.open(path / OWNER, os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else knows it yet
    os.set_inheritable(descriptor, False)
    _held[path] = descriptor
    return path


def empty(path: Path) -> None:
    """Forget the samples of processes that ran before (a role started again)."""
    for samples in path.glob("*.db"):
        samples.unlink(missing_ok=True)


def remove_own(path: Path) -> None:
    """Remove a directory this process made, and give up its lock."""
    shutil.rmtree(path, ignore_errors=True)
    descriptor = _held.pop(path, None)
    if descriptor is not None:
        os.close(descriptor)


def sweep() -> list[Path]:
    """Remove the directories whose owner is gone; the removed ones."""
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        if path.is_dir() and path not in _held and _abandoned(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _abandoned(path: Path) -> bool:
    try:
        descriptor = os.open(path / OWNER, os.O_RDWR)
    except OSError:  # no owner file (not ours, or being made) or another user's
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False  # its owner runs
    finally:
        os.close(descriptor)  # closing gives the lock back
    return True
