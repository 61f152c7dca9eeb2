"""A hung (not down) PostgreSQL must not hold a request thread for the whole stall (issue
47, point 8): the web server's connections carry a ``statement_timeout`` (10 s unless
``MEMGOV_DB_STATEMENT_TIMEOUT`` says otherwise), and a statement it cancels is the same
quick 503 problem with ``Retry-After`` as a database that does not answer, never a 500."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest
from django.db import connection

from core.apps import statement_timeout_on_connect
from tests.deploy.support import DEPLOY, ROOT
from webhooks import services as webhook_services

POSTGRES = "postgres://memgov@127.0.0.1:5432/memgov"
SHOW = (
    "import json; from config import settings as s;"
    "print(json.dumps(s.DATABASES['default']['OPTIONS'].get('options')))"
)


def _options(**env: str) -> Any:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MEMGOV_DB_")}
    shown = subprocess.run(  # noqa: S603 - our own settings module, read in a fresh process
        [sys.executable, "-c", SHOW],
        cwd=ROOT,
        env={**clean, "SECRET_KEY": "x", "DATABASE_URL": POSTGRES, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    if shown.returncode != 0:
        return shown.stderr
    return json.loads(shown.stdout)


def _shown() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        return str(cursor.fetchone()[0])


@pytest.mark.django_db
def test_each_new_connection_sets_the_timeout_after_connecting(settings):
    """A SET after connecting, not a startup option: PgBouncer refuses options it does not
    know, and a transaction-mode pooler would leak a session setting to other clients."""
    if connection.vendor != "postgresql":
        pytest.skip("statement_timeout is PostgreSQL's")
    assert _options(MEMGOV_DB_STATEMENT_TIMEOUT="10s") is None  # no startup option
    settings.DB_POOL_MODE = "session"
    try:
        for given in ("10s", "500ms"):
            settings.DB_STATEMENT_TIMEOUT = given
            statement_timeout_on_connect(None, connection)
            assert _shown() == given
        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = 0")
        settings.DB_STATEMENT_TIMEOUT = "0"  # workers, beat, migrations: no limit
        statement_timeout_on_connect(None, connection)
        assert _shown() == "0"
        settings.DB_POOL_MODE = "transaction"  # the role carries it there
        settings.DB_STATEMENT_TIMEOUT = "10s"
        statement_timeout_on_connect(None, connection)
        assert _shown() == "0"
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = 0")


def test_a_timeout_that_is_not_a_duration_refuses_to_start():
    refused = _options(MEMGOV_DB_STATEMENT_TIMEOUT="10s -c work_mem=1GB")

    assert "MEMGOV_DB_STATEMENT_TIMEOUT must be a duration" in refused


def test_the_web_server_sets_ten_seconds_unless_told():
    text = (DEPLOY / "gunicorn.conf.py").read_text(encoding="utf-8")

    assert 'os.environ.setdefault("MEMGOV_DB_STATEMENT_TIMEOUT", "10s")' in text


@pytest.mark.django_db(transaction=True)
def test_a_statement_longer_than_the_timeout_is_cancelled_as_a_quick_503(
    world, monkeypatch, settings
):
    if connection.vendor != "postgresql":
        pytest.skip("statement_timeout is PostgreSQL's")
    # The outage 503 is the server's answer to any operation, not one the schema lists.
    checker = "tests.openapi_check.ResponseSchemaMiddleware"
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if m != checker]

    def hung_database(principal: Any) -> Any:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(5)")  # what a stalled PostgreSQL looks like
        raise AssertionError("the statement should have been cancelled")

    monkeypatch.setattr(webhook_services, "webhooks_of", hung_database)
    client = world.client("rita")
    client.raise_request_exception = False
    connection.ensure_connection()
    settings.DB_POOL_MODE, settings.DB_STATEMENT_TIMEOUT = "session", "300ms"
    statement_timeout_on_connect(None, connection)  # what each new connection runs
    try:
        started = time.monotonic()
        response = client.get("/api/v1/webhooks")
        took = time.monotonic() - started
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = 0")

    assert response.status_code == 503, response.content
    assert response["Content-Type"] == "application/problem+json"
    assert response["Retry-After"] == "5"
    assert took < 3
