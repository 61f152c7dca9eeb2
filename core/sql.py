"""Written-out SQL on the hot paths (the candidate statement of every cold resolve): a
cursor that lets PostgreSQL keep the plan of a statement this connection runs often."""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from functools import cache, lru_cache
from typing import Any

import orjson
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.postgresql.base import ServerBindingCursor
from psycopg import postgres
from psycopg.adapt import AdaptersMap, Buffer, Loader
from psycopg.pq import Format
from psycopg.types.array import ListBinaryDumper


@cache
def on_postgresql() -> bool:
    """The default database is PostgreSQL. Asked on every resolve: ``connection.vendor``
    goes through Django's connection proxy and the thread's handler each time (2 µs), and
    the answer cannot change while the process runs (``DATABASES`` is read once)."""
    return bool(connections[DEFAULT_DB_ALIAS].vendor == "postgresql")


@contextmanager
def prepared_cursor() -> Iterator[Any]:
    """On PostgreSQL, a cursor binding its parameters on the server, whose statements
    psycopg prepares on first use: PostgreSQL then stops planning them again (planning
    the candidate statement took longer than running it), and whose ``json``/``jsonb``
    columns arrive decoded (``json_loads``), where Django's hand them over as text.
    Django's own cursors bind on the client, which never prepares, and Django turns
    psycopg's preparing off for the connection (``prepare_threshold``, for poolers without
    prepared statements): it is turned on here, which changes nothing for those cursors.
    Wrapped as Django wraps its cursors, so query logging, ``execute_wrapper`` and error
    translation behave the same.
    Elsewhere (SQLite) it is Django's cursor, and JSON columns are text."""
    django: Any = connections[DEFAULT_DB_ALIAS]  # once: each use of the proxy looks it up
    if django.vendor != "postgresql":
        with django.cursor() as cursor:
            yield cursor
        return
    django.close_if_health_check_failed()
    django.ensure_connection()
    with django.wrap_database_errors:
        raw = _binding_cursor(django)
        cursor = django._prepare_cursor(raw)  # how Django wraps every cursor
    if raw is not _kept.get(django.connection):
        with cursor:
            yield cursor
        return
    _kept.in_use = True
    try:
        yield cursor
    finally:
        _kept.in_use = False


@contextmanager
def bound_on_server() -> Iterator[None]:
    """On PostgreSQL, Django's own statements in this block bind their parameters on the
    server. A bulk insert sends each column as one array (``UNNEST``), which a client-
    binding cursor writes out value by value, escaping every quote of every JSON value
    with a regular expression: over a fifth of a revalidation chunk's CPU. Bound on the
    server, psycopg sends the arrays in binary. Elsewhere (SQLite) nothing changes."""
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


class _KeptCursor(threading.local):
    """One server-binding cursor per thread and database connection, kept open between
    uses: a new cursor reads the result's column loaders afresh on its first execute,
    which cost a third of a short statement's client time."""

    connection: Any = None
    cursor: Any = None
    in_use = False

    def get(self, connection: Any) -> Any:
        return self.cursor if self.connection is connection and not self.cursor.closed else None


_kept = _KeptCursor()


def _binding_cursor(django: Any) -> Any:
    """The kept cursor of this connection, a new one kept in its place (the connection is
    new), or, while the kept one is in use (a statement run inside another's block), a
    fresh one for the caller to close."""
    kept = _kept.get(django.connection)
    if kept is not None and not _kept.in_use:
        return kept
    binding: Any = ServerBindingCursor
    django.connection.prepare_threshold = 0
    raw = binding(django.connection)
    if django.timezone_name == "UTC":
        raw.adapters.register_loader("timestamptz", _timestamptz_loader())
    for name in ("json", "jsonb"):
        raw.adapters.register_loader(name, _JsonLoader)
    if kept is None and not _kept.in_use:
        _kept.connection, _kept.cursor = django.connection, raw
    return raw


@lru_cache(maxsize=256)
def one_text(sql: str) -> str:
    """The first string equal to ``sql`` that came here: one object for each statement
    text. psycopg keeps a cursor's adapters (the loaders of the result's columns, the
    dumpers of the parameters) only while the query it executes is the very object it ran
    before; a statement written out afresh for each request had them looked up again each
    time, 3% of a cold resolve's instructions."""
    return sql


@cache
def _timestamptz_loader() -> Any:
    """psycopg's own ``timestamptz`` loader (compiled, with its binary implementation).
    Django replaces it, on every connection, with a Python subclass that sets the
    connection's time zone on each value: reading the five instants of each candidate
    took a tenth of a cold resolve. In a UTC session, psycopg's own gives the same
    instants, in UTC."""
    return postgres.adapters.get_loader(postgres.types["timestamptz"].oid, Format.TEXT)


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


class _JsonLoader(Loader):
    """A ``json``/``jsonb`` column decoded as it is read (the candidate statement's one
    JSON array a row), with no second pass over the fetched rows."""

    def load(self, data: Buffer) -> Any:
        return json_loads(data)


def placeholders(values: Collection[Any]) -> str:
    """``%s, %s, …`` for ``IN (…)``, one per value, rather than ``= ANY(%s)``: psycopg
    quotes a list parameter on the client element by element, which cost more than the
    candidate statement's whole run."""
    return ", ".join(["%s"] * len(values))
