"""``manage.py migrate`` in production (issue 36, point 11): it runs with PostgreSQL's
``lock_timeout`` set, so a migration queued behind a long transaction gives up instead of
stalling every query on the table, and a second migrate (a retried Job pod) waits for the
first instead of racing it; ``migrate --check``, which every role's init container polls,
never waits."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection
from django.db.models.signals import pre_migrate
from django.test import override_settings

from core.management.commands.migrate import MIGRATE_LOCK_KEY
from tests.conftest import needs
from tests.deploy.live import wait_for
from tests.deploy.support import ROOT
from tests.integration.test_workflow_worker import _test_database_url, worker_environment

pytestmark = [needs("postgres")]


def _session() -> tuple[str, bool]:
    """This session's lock_timeout, and whether it holds the migrate lock."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW lock_timeout")
        [timeout] = cursor.fetchone()
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND pid = pg_backend_pid() AND (classid::bigint << 32) + objid::bigint = %s",
            [MIGRATE_LOCK_KEY],
        )
        [held] = cursor.fetchone()
    return str(timeout), held == 1


@override_settings(MIGRATE_LOCK_TIMEOUT="4s")
def test_migrations_run_under_lock_timeout_and_the_migrate_lock(db):
    seen: list[tuple[str, bool]] = []

    def look(**kwargs: Any) -> None:
        seen.append(_session())

    pre_migrate.connect(look, weak=False, dispatch_uid="test-migrate-session")
    try:
        call_command("migrate", "--no-input", verbosity=0)
    finally:
        pre_migrate.disconnect(dispatch_uid="test-migrate-session")

    assert seen and set(seen) == {("4s", True)}  # while the migrations ran
    assert _session() == ("0", False)  # and given back afterwards


def _migrate(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(  # noqa: S603 - our own manage.py, fixed arguments
        [sys.executable, "manage.py", "migrate", "--no-input", "-v0", *args],
        cwd=ROOT,
        env={**worker_environment(), "DEBUG": "false", "SECRET_KEY": "migrate-test"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _queued(holder: psycopg.Connection[Any]) -> bool:
    row = holder.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
        "AND (classid::bigint << 32) + objid::bigint = %s",
        [MIGRATE_LOCK_KEY],
    ).fetchone()
    return bool(row and row[0])


@pytest.mark.django_db(transaction=True)
def test_a_second_migrate_waits_for_the_first_and_a_check_never_waits():
    # Given a migrate in progress (the test holds its lock, as the first Job pod would).
    holder = psycopg.connect(_test_database_url(), autocommit=True)
    holder.execute("SELECT pg_advisory_lock(%s)", [MIGRATE_LOCK_KEY])
    try:
        # When a second migrate starts, it queues behind the first.
        second = _migrate()
        wait_for("the second migrate to queue", lambda: _queued(holder))
        assert second.poll() is None

        # And the roles' init containers still get their answer meanwhile.
        check = _migrate("--check")
        assert check.wait(timeout=60) == 0, check.communicate()[0]
    finally:
        holder.execute("SELECT pg_advisory_unlock(%s)", [MIGRATE_LOCK_KEY])
        holder.close()

    # Then, once the first is done, the second finds nothing left and succeeds.
    assert second.wait(timeout=60) == 0, second.communicate()[0]
