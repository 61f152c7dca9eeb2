"""Issue 36, point 9: emails carry memory values, so outside DEBUG they never go to the
console (the logs), and a process without a mail server configured refuses to start.
Each case is a fresh interpreter reading the settings as a deployed process does."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.deploy.support import ROOT

READ = "from django.conf import settings; settings.EMAIL_BACKEND; print(settings.EMAIL_BACKEND)"
MAIL_VARIABLES = ("EMAIL_URL", "EMAIL_BACKEND", "EMAIL_HOST", "EMAIL_PORT", "DEBUG")


def _start(read: str = READ, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in MAIL_VARIABLES}
    return subprocess.run(  # noqa: S603 - our own interpreter and settings
        [sys.executable, "-c", read],
        cwd=ROOT,
        env={**clean, "SECRET_KEY": "x", "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
    )


def test_a_production_process_without_email_url_refuses_to_start():
    started = _start()

    assert started.returncode != 0
    assert "EMAIL_URL (or Django's EMAIL_HOST) must be set when DEBUG is off" in started.stderr


def test_djangos_own_email_variables_configure_the_smtp_server_as_the_contract_allows():
    read = (
        "from django.conf import settings; "
        "print(settings.EMAIL_BACKEND, settings.EMAIL_HOST, settings.EMAIL_PORT)"
    )
    started = _start(read, EMAIL_HOST="127.0.0.1", EMAIL_PORT="2525")

    assert started.returncode == 0, started.stderr
    assert started.stdout.split() == [
        "django.core.mail.backends.smtp.EmailBackend",
        "127.0.0.1",
        "2525",
    ]


@pytest.mark.parametrize(
    "env",
    [
        {"EMAIL_URL": "console://"},
        {"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"},
    ],
)
def test_the_console_backend_is_refused_outside_debug(env):
    started = _start(**env)

    assert started.returncode != 0
    assert "console email backend" in started.stderr


def test_debug_without_email_url_writes_files_not_logs(tmp_path):
    started = _start(DEBUG="true", MEMGOV_VAR_DIR=str(tmp_path))

    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == "operations.mail.EmlFileBackend"


def test_a_configured_mail_server_starts():
    started = _start(EMAIL_URL="smtp+tls://user:secret@mail.example.com:587")

    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == "django.core.mail.backends.smtp.EmailBackend"
