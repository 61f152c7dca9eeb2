"""API keys: shown once, stored as a sha256 with a lookup prefix, never logged in clear.

Every request reads its key's row (one indexed query by prefix), so a revoked, expired or
relabelled key, or a deactivated person, is refused or narrowed on its very next request
in every process, however the row was changed."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, connection
from django.db.models import Model, Q
from django.utils import timezone

from core.models import ApiKey, Membership, Tenant
from core.sql import bound_on_server, read_reconnecting

KEY_PREFIX = "mg"
# A key's use is recorded at most this often, so authentication is not a write per request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def generate_key() -> tuple[str, str]:
    """Return ``(lookup_prefix, raw_key)``; only the raw key's hash is stored."""
    lookup = secrets.token_hex(6)
    return lookup, f"{KEY_PREFIX}_{lookup}_{secrets.token_urlsafe(32)}"


def api_key_for_raw(raw: str) -> ApiKey | None:
    """The live key for a raw key (with its tenant, and its person and membership for a
    person's key), or None when it is unknown, revoked, expired, or its person is
    deactivated. Its use is recorded (``touch``)."""
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX:
        return None
    key = _live_key(parts[1])
    if key is None or not hmac.compare_digest(key.key_hash, hash_key(raw)):
        return None
    if key.user is not None and not key.user.is_active:
        return None
    touch(key)
    return key


class _KeyRead:
    """The key, its tenant, person and membership in one statement of fixed text, loaded
    with ``Model.from_db`` as the ORM loads rows. Every request runs it: the ORM took
    1.3 ms of Python to build the same query with ``select_related`` each time, four times
    the statement's own round trip."""

    def __init__(self) -> None:
        self.models: list[type[Model]] = [ApiKey, Tenant, get_user_model(), Membership]
        self.fields = [list(model._meta.concrete_fields) for model in self.models]
        self.attnames = [[field.attname for field in fields] for fields in self.fields]
        tables = [model._meta.db_table for model in self.models]
        # Per column, the converters the ORM's compiler would apply to it, worked out once.
        self.converters: list[tuple[Any, list[Any]]] = []
        for table, fields in zip(tables, self.fields, strict=True):
            for field in fields:
                column = field.get_col(table)
                converters = [
                    *connection.ops.get_db_converters(column),
                    *column.get_db_converters(connection),
                ]
                self.converters.append((column, converters))
        columns = ", ".join(
            f"{alias}.{connection.ops.quote_name(str(field.column))}"
            for alias, fields in zip("ktum", self.fields, strict=True)
            for field in fields
        )
        self.sql = (
            f"SELECT {columns} FROM {tables[0]} k"  # noqa: S608 - names from the models
            f" JOIN {tables[1]} t ON t.id = k.tenant_id"
            f" LEFT JOIN {tables[2]} u ON u.id = k.user_id"
            f" LEFT JOIN {tables[3]} m ON m.user_id = u.id"
            " WHERE k.prefix = %s AND k.revoked_at IS NULL"
            " AND (k.expires_at IS NULL OR k.expires_at > %s)"
        )

    def instances(self, row: tuple[Any, ...]) -> list[Any]:
        """One instance a model, or None for a missing person or membership. Values pass
        through the backend's and the field's converters, as the ORM's compiler applies
        them (JSON arrives as text; SQLite's datetimes as strings)."""
        values = list(row)
        for at, (column, converters) in enumerate(self.converters):
            for convert in converters:
                values[at] = convert(values[at], column, connection)
        found: list[Any] = []
        start = 0
        for model, attnames in zip(self.models, self.attnames, strict=True):
            own = values[start : start + len(attnames)]
            start += len(attnames)
            # The primary key is None when no such row was joined (no person, no membership).
            found.append(None if own[0] is None else model.from_db(DEFAULT_DB_ALIAS, attnames, own))
        return found


_read: _KeyRead | None = None


def _live_key(prefix: str) -> ApiKey | None:
    global _read
    if _read is None:
        _read = _KeyRead()
    statement = _read
    row = read_reconnecting(lambda: _key_row(statement, prefix))  # a request's first query
    if row is None:
        return None
    key, tenant, user, membership = _read.instances(row)
    key.tenant = tenant
    key.user = user
    if user is not None and membership is not None:
        user.membership = membership
    return key  # type: ignore[no-any-return]


def _key_row(statement: _KeyRead, prefix: str) -> tuple[Any, ...] | None:
    with bound_on_server(), connection.cursor() as cursor:  # prepared once run often
        cursor.execute(statement.sql, [prefix, timezone.now()])
        row: tuple[Any, ...] | None = cursor.fetchone()
    return row


def touch(key: ApiKey) -> None:
    """Record the key's use, at most once per ``LAST_USED_RESOLUTION``. The UPDATE is
    conditional, so processes that each think the stamp is old write it once between
    them, and a request that sees it fresh writes nothing."""
    now = timezone.now()
    if key.last_used_at is not None and now - key.last_used_at <= LAST_USED_RESOLUTION:
        return
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
    ApiKey.objects.filter(stale, pk=key.pk).update(last_used_at=now)
    key.last_used_at = now


def agent_keys_by_labels(tenant_id: int) -> dict[frozenset[str], list[ApiKey]]:
    """The tenant's agent keys that resolve now (not revoked, not expired), grouped by
    the labels they resolve with (``Principal.labels`` of an agent key: the key's own):
    each group is told the same by resolve. In one query, by name then prefix."""
    now = timezone.now()
    keys = (
        ApiKey.objects.filter(
            tenant_id=tenant_id, principal=ApiKey.Principal.AGENT, revoked_at__isnull=True
        )
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .only("prefix", "agent_name", "labels")
        .order_by("agent_name", "prefix")
    )
    groups: dict[frozenset[str], list[ApiKey]] = {}
    for key in keys:
        groups.setdefault(frozenset(str(label) for label in key.labels), []).append(key)
    return groups
