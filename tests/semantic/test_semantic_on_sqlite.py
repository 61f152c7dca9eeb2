"""The semantic stories on SQLite (``make run``'s database), with sqlite-vec loaded into it:
``test_semantic_search.py`` and ``test_semantic_lifecycle.py`` run again in a child
pytest whose ``DATABASE_URL`` is a SQLite file, since one test process holds one database
backend. Its readiness test says
``semantic: on``, so sqlite-vec was loaded there and search used it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_semantic_stories_hold_on_sqlite(tmp_path: Path):
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'semantic.sqlite3'}",
        "MEMGOV_VAR_DIR": str(tmp_path / "var"),
    }
    env.pop("PYTEST_XDIST_WORKER", None)  # the child keeps this process's Redis databases
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "tests/semantic/test_semantic_search.py",
            "tests/semantic/test_semantic_lifecycle.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and "skipped" not in done.stdout


def test_embed_status_reads_a_sqlite_database_from_the_command_line(tmp_path: Path):
    """The operator's progress command opens its own connection, sqlite-vec with it."""
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'status.sqlite3'}",
        "MEMGOV_SEMANTIC": "true",
        "MEMGOV_VAR_DIR": str(tmp_path / "var"),
    }
    manage = [sys.executable, "manage.py"]
    for command in (["migrate", "-v0"], ["embed", "--status"]):
        done = subprocess.run(  # noqa: S603 - this checkout's manage.py
            [*manage, *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]

    assert done.stdout.strip().endswith("0 of 0 versions and entities embedded (100%)")
