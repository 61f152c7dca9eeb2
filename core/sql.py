"""Written-out SQL on the hot paths (the candidate statement of every cold resolve): a
cursor that lets PostgreSQL keep the plan of a statement this connection runs often."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.db.backends.postgresql.base import ServerBindingCursor


@contextmanager
def prepared_cursor() -> Iterator[Any]:
    """On PostgreSQL, a cursor binding its parameters on the server, whose statements
    psycopg prepares on first use: PostgreSQL then stops planning them again (planning
    the candidate statement took longer than running it). Django's own cursors bind on
    the client, which never prepares, and Django turns psycopg's preparing off for the
    connection (``prepare_threshold``, for poolers without prepared statements): it is
    turned on here, which changes nothing for those cursors. Wrapped as Django wraps its
    cursors, so query logging, ``execute_wrapper`` and error translation behave the same.
    Elsewhere (SQLite) it is Django's cursor."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            yield cursor
        return
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    django: Any = connection  # ``_prepare_cursor`` is how Django wraps every cursor
    binding: Any = ServerBindingCursor
    with connection.wrap_database_errors:
        connection.connection.prepare_threshold = 0
        cursor = django._prepare_cursor(binding(connection.connection))
    with cursor:
        yield cursor


def placeholders(values: Collection[Any]) -> str:
    """``%s, %s, …`` for ``IN (…)``, one per value, rather than ``= ANY(%s)``: psycopg
    quotes a list parameter on the client element by element, which cost more than the
    candidate statement's whole run."""
    return ", ".join(["%s"] * len(values))
