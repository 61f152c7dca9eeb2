"""The image installs pinned, hash-checked dependencies (issue 36, point 13):
requirements/runtime.lock, made by ``make lock`` (pip-compile) from pyproject.toml, covers
every runtime dependency and the extras they ask for, each at a version its range allows,
and deploy/Dockerfile installs from it and from nowhere else."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.support import DEPLOY, ROOT

LOCK = ROOT / "requirements" / "runtime.lock"


def _locked() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) of each pin in the lockfile."""
    text = LOCK.read_text(encoding="utf-8")
    pins: dict[str, tuple[str, list[str]]] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        match = re.match(r"([A-Za-z0-9._-]+)==(\S+)", block)
        if match:
            hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", block)
            pins[canonicalize_name(match[1])] = (match[2], hashes)
    return pins


def _runtime() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [Requirement(line) for line in project["dependencies"]]


def _extras_needs(requirement: Requirement) -> set[str]:
    """What the requirement's extras add (psycopg[binary]: psycopg-binary), as the
    installed distribution's metadata says."""
    needs: set[str] = set()
    for line in importlib.metadata.requires(requirement.name) or []:
        wanted = Requirement(line)
        for extra in requirement.extras:
            if wanted.marker is not None and wanted.marker.evaluate({"extra": extra}):
                needs.add(canonicalize_name(wanted.name))
    return needs


def test_every_runtime_dependency_is_pinned_with_hashes_within_its_range():
    locked = _locked()

    assert len(locked) > 30
    for requirement in _runtime():
        version, hashes = locked[canonicalize_name(requirement.name)]
        assert requirement.specifier.contains(version, prereleases=True), (requirement, version)
        assert hashes, requirement.name
        for extra_need in _extras_needs(requirement):
            assert extra_need in locked, (requirement, extra_need)
    assert all(hashes for _, hashes in locked.values())  # --require-hashes needs every one
    assert "psycopg-binary" in locked  # the extras were followed


def test_the_image_installs_the_lockfile_hash_checked_and_nothing_unpinned():
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    installs = [i.strip() for i in re.findall(r"pip install [^&\n\\]*", dockerfile)]

    assert "COPY pyproject.toml requirements/runtime.lock ./" in dockerfile
    assert "pip install --no-cache-dir --require-hashes -r runtime.lock" in installs
    assert "pip install --no-cache-dir --no-deps ." in installs
    # pip itself aside, no install resolves dependencies on its own.
    assert [i for i in installs if "runtime.lock" not in i and "--no-deps" not in i] == [
        'pip install --no-cache-dir "pip>=25.1"'
    ]


def test_the_lockfile_says_how_to_refresh_it():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")

    assert "#    make lock" in LOCK.read_text(encoding="utf-8")
    assert "\nlock:" in makefile and "-o requirements/runtime.lock pyproject.toml" in makefile
