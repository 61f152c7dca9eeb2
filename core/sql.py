"""Written-out SQL on the hot paths (the candidate statement of every cold resolve).

Statements run on a server-binding cursor (``bound_on_server``) are prepared by psycopg
once a connection has run them a few times, where the deployment allows it
(``prepare_threshold`` in ``DATABASES["default"]["OPTIONS"]``, config/settings.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any, TypeVar

import orjson
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections
from django.db.backends.postgresql.base import ServerBindingCursor
from psycopg.adapt import AdaptersMap, Buffer
from psycopg.types.array import ListBinaryDumper


@cache
def on_postgresql() -> bool:
    """The default database is PostgreSQL. Asked on every resolve: ``connection.vendor``
    goes through Django's connection proxy and the thread's handler each time (2 µs), and
    the answer cannot change while the process runs (``DATABASES`` is read once)."""
    return bool(connections[DEFAULT_DB_ALIAS].vendor == "postgresql")


@contextmanager
def bound_on_server() -> Iterator[None]:
    """On PostgreSQL, Django's own statements in this block bind their parameters on the
    server, which lets psycopg prepare them (client binding never does). A bulk insert
    sends each column as one array (``UNNEST``), which a client-binding cursor writes out
    value by value, escaping every quote of every JSON value with a regular expression:
    over a fifth of a revalidation chunk's CPU. Bound on the server, psycopg sends the
    arrays in binary. Elsewhere (SQLite) nothing changes."""
    django: Any = connections[DEFAULT_DB_ALIAS]
    if django.vendor != "postgresql":
        yield
        return
    django.ensure_connection()
    connection = django.connection
    made_by, connection.cursor_factory = connection.cursor_factory, _BinaryArraysCursor
    try:
        yield
    finally:
        connection.cursor_factory = made_by


class _BinaryArraysCursor(ServerBindingCursor):
    """Lists in binary, their elements too: an array is then lengths and bytes, where
    the text format escapes each quote of each text or JSON value."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        adapters: AdaptersMap = self.adapters  # type: ignore[attr-defined]  # psycopg's Cursor
        adapters.register_dumper(list, ListBinaryDumper)


T = TypeVar("T")


def read_reconnecting(read: Callable[[], T]) -> T:
    """A request's first read, run once more on a new connection when the persistent one
    it reused turns out dead (the server restarted, a pooler or ``pg_terminate_backend``
    dropped it while idle). The web role does not check a connection before reuse
    (``CONN_HEALTH_CHECKS`` off: a ``SELECT 1`` round trip on every request), so a dead one
    is found here instead. Only a read outside any transaction runs again: nothing of it
    can have been half done, and nothing written before it is undone. A new connection
    that fails, or an error the connection survives (a statement timeout), is raised."""
    django: Any = connections[DEFAULT_DB_ALIAS]
    reused = django.connection is not None
    try:
        return read()
    except (OperationalError, InterfaceError):
        if not reused or django.in_atomic_block or django.is_usable():
            raise
        django.close()
    return read()


# Nineteen digits in a row may be an integer beyond 64 bits, which orjson reads as a float.
# With every digit written as "0" they are one substring search away: a regular expression
# took three to ten times as long on a candidate row.
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_NINETEEN_DIGITS = b"0" * 19


def json_loads(data: Buffer | str) -> Any:
    """JSON text as Python values: orjson, several times faster than ``json``, except for
    a long integer, which orjson rounds and ``json`` keeps."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if len(raw) >= 19 and _NINETEEN_DIGITS in raw.translate(_DIGITS_AS_ZERO):
        return json.loads(raw)
    return orjson.loads(raw)


def fetched(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Every row of one statement on the default connection."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def placeholders(values: Collection[Any]) -> str:
    """``%s, %s, …`` for ``IN (…)``, one per value, rather than ``= ANY(%s)``: psycopg
    quotes a list parameter on the client element by element, which cost more than the
    candidate statement's whole run."""
    return ", ".join(["%s"] * len(values))
