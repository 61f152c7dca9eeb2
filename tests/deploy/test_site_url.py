"""Issue 47 follow-up, point 5: under ``make prod`` on another port, emails and
``create_user`` linked to ``http://127.0.0.1:8000/…``: README's example set no SITE_URL,
and nothing said it was a guess."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.deploy.support import ROOT

PRINT_SITE_URL = "import django; django.setup(); from django.conf import settings; "
PRINT_SITE_URL += "print(settings.SITE_URL)"


def _run(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"SITE_URL", "GUNICORN_BIND"}}
    return subprocess.run(  # noqa: S603 - our own settings, fixed arguments
        [sys.executable, *argv],
        cwd=ROOT,
        env={
            **clean,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "SECRET_KEY": "test-only-secret-key-for-site-url-checks-0123456789",
            "DEBUG": "false",
            "EMAIL_URL": "dummy://",
            **env,
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("bind", "expected"),
    [
        ("127.0.0.1:8471", "http://127.0.0.1:8471"),  # make prod on another port
        ("0.0.0.0:8000", "http://127.0.0.1:8000"),  # a container's: no address to link to
        ("", "http://127.0.0.1:8000"),
    ],
)
def test_without_site_url_links_name_the_address_gunicorn_listens_on(bind, expected):
    done = _run(["-c", PRINT_SITE_URL], GUNICORN_BIND=bind)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected


def test_production_without_site_url_is_warned_about_and_with_it_is_not():
    guessed = _run(["manage.py", "check"], GUNICORN_BIND="127.0.0.1:8471")
    named = _run(["manage.py", "check"], SITE_URL="https://memgov.example.com")

    assert guessed.returncode == 0, guessed.stderr
    said = guessed.stdout + guessed.stderr
    assert "(memgov.W001) SITE_URL is not set: emails and operator commands link to " in said
    assert "http://127.0.0.1:8471" in said
    assert "memgov.W001" not in named.stdout + named.stderr


def test_the_make_prod_example_sets_site_url():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example = readme.split("### On one machine: `make prod`", 1)[1].split("```")[1]

    assert "export SITE_URL=" in example
