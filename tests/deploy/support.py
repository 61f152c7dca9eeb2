"""Readers for the deployment files, shared by the tests of deploy/."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern as Docker reads it: ``**`` spans directories, ``*`` and
    ``?`` stay inside one, and a pattern that names a directory covers what is under it."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(f"{out}(?:/.*)?")


def dockerignored(path: str) -> bool:
    """Would ``path`` (relative to the build context, the repository root) stay out?"""
    ignored = False
    for raw in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        if _pattern_regex(pattern).fullmatch(path):
            ignored = not negated
    return ignored


def env_example(name: str = ".env.example") -> dict[str, str]:
    """The variables an example env file under deploy/ sets (commented lines left out)."""
    pairs = {}
    for line in (DEPLOY / name).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip()
    return pairs


def env_example_names(name: str) -> set[str]:
    """Every variable an example env file names, set or shown at its default (``# NAME=``)."""
    text = (DEPLOY / name).read_text(encoding="utf-8")
    return set(re.findall(r"^(?:# )?([A-Z][A-Z0-9_]*)=", text, flags=re.MULTILINE))


def procfile() -> dict[str, list[str]]:
    """deploy/Procfile's processes as argument lists (after ``exec``), each
    ``${VAR:-default}`` at its default."""
    return {name: argv for name, (_, argv) in _procfile_lines().items()}


def procfile_environment() -> dict[str, dict[str, str]]:
    """The variables each Procfile line sets for its process (``NAME=value exec …``), at
    their defaults."""
    return {name: env for name, (env, _) in _procfile_lines().items()}


def _procfile_lines() -> dict[str, tuple[dict[str, str], list[str]]]:
    processes = {}
    for line in (DEPLOY / "Procfile").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, command = line.split(":", 1)
        argv = shlex.split(re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", command))
        env = {}
        while re.fullmatch(r"\w+=.*", argv[0]):
            key, _, value = argv.pop(0).partition("=")
            env[key] = value
        processes[name.strip()] = (env, argv[1:] if argv[0] == "exec" else argv)
    return processes


def is_celery_worker(argv: list[str]) -> bool:
    return "celery" in argv[0] and "worker" in argv


def consumed_queues(argv: list[str]) -> set[str] | None:
    """The queues a ``celery worker`` command line names with -Q, or None: all of them."""
    for index, part in enumerate(argv):
        if part in ("-Q", "--queues") and index + 1 < len(argv):
            return set(argv[index + 1].split(","))
        for prefix in ("--queues=", "-Q"):
            if part.startswith(prefix) and len(part) > len(prefix):
                return set(part.removeprefix(prefix).split(","))
    return None


def promtool() -> str:
    """promtool's path; skipped locally without it, required under CI=true."""
    binary = shutil.which("promtool")
    if binary is None:
        if os.environ.get("CI") == "true":
            raise AssertionError("promtool is needed (apt-get install prometheus)")
        pytest.skip("no promtool here (apt-get install prometheus)")
    return binary


def run_promtool_tests(folder: Path, tests: dict[str, Any]) -> str:
    """``promtool test rules`` on these unit tests (written to ``folder``); its output,
    or the failure with what promtool said."""
    path = folder / "rules.test.yaml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False), encoding="utf-8")
    result = subprocess.run(  # noqa: S603 - promtool on our own files
        [promtool(), "test", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout
