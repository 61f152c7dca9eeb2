"""Prepared statements come only from Django's psycopg options (config/settings.py): on by
default, off with ``MEMGOV_DB_PREPARED_STATEMENTS=false`` for a transaction-mode pooler
such as PgBouncer, which cannot keep a session's prepared statements."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from urllib.parse import urlsplit

import pytest
from django.db import connection

from tests.conftest import needs

pytestmark = [needs("postgres"), pytest.mark.django_db]

# A process of its own reads the settings afresh, runs one statement more often than the
# threshold, and says what its psycopg connection was told and what PostgreSQL kept.
CHILD = """
import json, django
django.setup()
from django.db import connection
from core.sql import bound_on_server
with bound_on_server(), connection.cursor() as cursor:
    for _ in range(8):
        cursor.execute("SELECT %s::int", [1])
    cursor.execute("SELECT count(*) FROM pg_prepared_statements")
    (prepared,) = cursor.fetchone()
print(json.dumps({"threshold": connection.connection.prepare_threshold, "prepared": prepared}))
"""


def _connection_in_a_process(**env: str) -> dict[str, object]:
    url = urlsplit(os.environ["DATABASE_URL"])._replace(path=f"/{connection.settings_dict['NAME']}")
    done = subprocess.run(  # noqa: S603 - this interpreter, our own script
        [sys.executable, "-c", CHILD],
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": url.geturl(),
            **env,
        },
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    answer: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return answer


def test_statements_run_often_are_prepared_by_default():
    seen = _connection_in_a_process()
    assert seen["threshold"] == 5
    assert seen["prepared"] == 1


def test_turned_off_nothing_is_prepared():
    seen = _connection_in_a_process(MEMGOV_DB_PREPARED_STATEMENTS="false")
    assert seen["threshold"] is None
    assert seen["prepared"] == 0
