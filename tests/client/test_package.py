"""``clients/python`` is a package of its own: pip builds it from its pyproject, it ships
``py.typed``, depends on httpx only, and never imports Django."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"


def test_pip_builds_a_typed_wheel_that_depends_on_httpx_only(tmp_path):
    """Built from a copy, so setuptools' build directories never land in the tree."""
    source = shutil.copytree(CLIENT, tmp_path / "src", ignore=shutil.ignore_patterns("*.egg-info"))
    subprocess.run(  # noqa: S603 - pip of this interpreter on our own directory
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
    )

    (wheel,) = tmp_path.glob("memgov_client-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    assert {"memgov_client/__init__.py", "memgov_client/py.typed"} <= names
    requires = metadata.get_all("Requires-Dist") or []
    assert [r.split(">")[0].split("<")[0] for r in requires] == ["httpx"]


def test_the_client_never_imports_django():
    code = (
        "import sys, memgov_client, memgov_client.webhooks; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'django', 'rest_framework'}))"
    )
    result = subprocess.run(  # noqa: S603 - this interpreter, a fixed snippet
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=CLIENT,
    )

    assert result.stdout.strip() == "[]"
