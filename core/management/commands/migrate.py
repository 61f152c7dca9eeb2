"""``manage.py migrate`` that is safe to start twice and never queues traffic behind it.

Django's own command, with two additions on PostgreSQL: a session advisory lock, so a
second migrate (a retried Job pod, ``make prod`` beside compose) waits for the first and
then finds nothing to do; and ``lock_timeout`` (``MEMGOV_MIGRATE_LOCK_TIMEOUT``), so a
migration waiting for a table lock behind a long transaction gives up and fails (the Job
retries it) instead of making every query on that table wait behind it. ``--check`` and
``--plan`` change nothing and take neither."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from django.conf import settings
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import DatabaseError, connections

# pg_advisory_lock's key for "a migrate runs": any fixed 64-bit number no other lock uses.
MIGRATE_LOCK_KEY = 0x6D656D676F76_01  # "memgov" 1


class Command(DjangoMigrate):
    help = DjangoMigrate.help + " Serialised by an advisory lock, with lock_timeout set."

    def handle(self, *args: Any, **options: Any) -> None:
        connection = connections[options["database"]]
        if connection.vendor != "postgresql" or options["check_unapplied"] or options["plan"]:
            super().handle(*args, **options)
            return
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [MIGRATE_LOCK_KEY])
            # After the advisory lock: its wait is bounded by the Job's deadline instead.
            cursor.execute(
                "SELECT set_config('lock_timeout', %s, false)", [settings.MIGRATE_LOCK_TIMEOUT]
            )
        try:
            super().handle(*args, **options)
        finally:
            # A lost session holds neither: nothing to give back then.
            with suppress(DatabaseError), connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
                cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATE_LOCK_KEY])
