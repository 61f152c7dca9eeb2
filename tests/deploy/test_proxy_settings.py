"""Behind a TLS-terminating ingress Django sees plain HTTP with ``X-Forwarded-Proto:
https``. With the proxy trusted by setting, a reviewer logs in over https; without it,
the CSRF origin check refuses the same form post."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = "https://memgov.example.com"
SHOW = (
    "import json; from config import settings as s;"
    "print(json.dumps({'proxy': getattr(s, 'SECURE_PROXY_SSL_HEADER', None),"
    " 'origins': s.CSRF_TRUSTED_ORIGINS, 'secure_cookies': s.SESSION_COOKIE_SECURE,"
    " 'log_formatter': s.LOGGING['handlers']['console']['formatter']}))"
)


def deployed_settings(**env: str) -> dict[str, Any]:
    """The settings module as a fresh process reads it from this environment."""
    names = (
        "MEMGOV_TRUST_X_FORWARDED_PROTO",
        "CSRF_TRUSTED_ORIGINS",
        "SITE_URL",
        "MEMGOV_LOG_FORMAT",
    )
    clean = {k: v for k, v in os.environ.items() if k not in names}
    shown = subprocess.run(  # noqa: S603 - our own settings module, read in a fresh process
        [sys.executable, "-c", SHOW],
        cwd=ROOT,
        env={**clean, "SECRET_KEY": "x", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(shown.stdout)
    return result


def test_the_proxy_header_is_trusted_only_when_the_operator_says_so():
    trusted = deployed_settings(MEMGOV_TRUST_X_FORWARDED_PROTO="true", SITE_URL=PUBLIC)
    default = deployed_settings(SITE_URL=PUBLIC)

    assert trusted["proxy"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert default["proxy"] is None


def test_trusted_origins_are_the_site_url_and_the_listed_ones():
    shown = deployed_settings(
        SITE_URL=f"{PUBLIC}/", CSRF_TRUSTED_ORIGINS="https://memgov.example.org,"
    )

    assert shown["origins"] == [PUBLIC, "https://memgov.example.org"]
    assert shown["secure_cookies"] is True


def test_local_defaults_trust_only_the_local_site():
    shown = deployed_settings()

    assert shown["origins"] == ["http://127.0.0.1:8000"]
    assert shown["proxy"] is None


def _login_behind_the_proxy(world: Any, client_class: Any) -> Any:
    client = client_class(enforce_csrf_checks=True)
    proxy = {"HTTP_HOST": "memgov.example.com", "HTTP_X_FORWARDED_PROTO": "https"}
    page = client.get("/accounts/login/", **proxy)
    assert page.status_code == 200
    return client.post(
        "/accounts/login/",
        {
            "username": "rita",
            "password": "rita-pass-123",
            "csrfmiddlewaretoken": page.cookies["csrftoken"].value,
        },
        HTTP_ORIGIN=PUBLIC,
        **proxy,
    )


def _apply(settings: Any, shown: dict[str, Any]) -> None:
    settings.ALLOWED_HOSTS = ["memgov.example.com"]
    settings.SECURE_PROXY_SSL_HEADER = tuple(shown["proxy"]) if shown["proxy"] else None
    settings.CSRF_TRUSTED_ORIGINS = shown["origins"]


@pytest.mark.django_db
def test_a_reviewer_logs_in_over_https_behind_the_proxy(world, settings, client):
    _apply(settings, deployed_settings(MEMGOV_TRUST_X_FORWARDED_PROTO="true", SITE_URL=PUBLIC))

    response = _login_behind_the_proxy(world, type(client))

    assert response.status_code == 302
    assert response["Location"] == "/"
    assert "sessionid" in response.cookies


@pytest.mark.django_db
def test_without_the_proxy_settings_the_same_login_is_refused(world, settings, client):
    _apply(settings, deployed_settings())

    response = _login_behind_the_proxy(world, type(client))

    assert response.status_code == 403
    assert b"CSRF" in response.content
    assert "sessionid" not in response.cookies
