"""The web role does not check a persistent connection before reuse (no ``SELECT 1`` on
every request): when PostgreSQL dropped it while idle, the request's first read finds it
dead and runs again on a new connection, so the caller never sees it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="persistent connections"),
]


@pytest.fixture
def no_health_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """As deploy/gunicorn.conf.py runs the web role."""
    monkeypatch.setitem(connection.settings_dict, "CONN_HEALTH_CHECKS", False)
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 60)
    connection.close()


def _terminate_backend_of_this_connection() -> int:
    pid: int = connection.connection.info.backend_pid
    with psycopg.connect(**_params(), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
    return pid


def _params() -> dict[str, Any]:
    params = connection.get_connection_params()
    return {
        name: params[name]
        for name in ("host", "port", "user", "password", "dbname")
        if name in params
    }


def test_a_key_request_after_the_server_dropped_the_connection_is_answered(world, no_health_checks):
    agent = world.client("agent")
    assert agent.get("/api/v1/policy").status_code == 200
    dropped = _terminate_backend_of_this_connection()

    response = agent.get("/api/v1/policy")

    assert response.status_code == 200, response.content
    assert connection.connection.info.backend_pid != dropped


def test_a_revoked_key_is_still_refused_on_the_request_that_reconnects(world, no_health_checks):
    agent = world.client("agent")
    assert agent.get("/api/v1/policy").status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("UPDATE memory_apikey SET revoked_at = now()")
    _terminate_backend_of_this_connection()

    response = agent.get("/api/v1/policy")

    assert response.status_code == 401


def test_a_signed_in_browser_after_the_server_dropped_the_connection_is_answered(
    world, no_health_checks
):
    browser = Client()
    browser.force_login(world.users["rita"])
    assert browser.get("/api/v1/policy").status_code == 200
    dropped = _terminate_backend_of_this_connection()

    response = browser.get("/api/v1/policy")

    assert response.status_code == 200, response.content
    assert connection.connection.info.backend_pid != dropped


def test_the_web_server_alone_skips_the_check_before_reuse():
    text = (Path(__file__).resolve().parents[2] / "deploy" / "gunicorn.conf.py").read_text()

    assert 'os.environ.setdefault("MEMGOV_DB_HEALTH_CHECKS", "false")' in text
    assert settings.DATABASES["default"]["CONN_HEALTH_CHECKS"] is (
        os.environ.get("MEMGOV_DB_HEALTH_CHECKS", "true") != "false"
    )
