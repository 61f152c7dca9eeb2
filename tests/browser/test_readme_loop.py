"""Issue 37, point 11: the README's loop, run as written (its shell block, with curl and
jq) against a live server with a real Celery worker, prints what the README says."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.conf import settings

from tests.browser.conftest import Site

pytestmark = pytest.mark.browser

README = Path(settings.BASE_DIR) / "README.md"


def readme_loop() -> str:
    """The shell block after "Then the whole loop"."""
    text = README.read_text()
    after = text[text.index("Then the whole loop") :]
    match = re.search(r"```sh\n(.*?)```", after, re.S)
    assert match is not None
    return match.group(1)


def test_the_readme_loop_runs_as_written_and_resolves_9_pier_st(
    site: Site, settings: Any, tmp_path: Path
) -> None:
    for tool in ("curl", "jq", "bash"):
        assert shutil.which(tool), f"{tool} is needed by the README's loop"
    settings.ALLOWED_HOSTS = ["*"]  # the README speaks to 127.0.0.1, the live server to localhost
    (tmp_path / "var").symlink_to(Path(settings.VAR_DIR))  # make run's var/, with the keys
    port = str(urlsplit(site.url).port)
    env = {**os.environ, "MEMGOV_PORT": port}

    with site.worker():
        done = subprocess.run(  # noqa: S603 - the README's own commands, on loopback
            ["bash", "-eo", "pipefail", "-c", readme_loop()],  # noqa: S607
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    assert lines[0] == '"checking"'
    assert "active" in lines  # the poll waited for the worker
    assert '"value": "9 Pier St"' in done.stdout
    assert "more specific" in done.stdout
