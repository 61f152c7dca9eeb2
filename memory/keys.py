"""API keys: shown once, stored as a sha256 with a lookup prefix, never logged in clear."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from core.models import ApiKey, Tenant
from core.sql import prepared_cursor

KEY_PREFIX = "mg"
_LAST_USED_RESOLUTION = timedelta(minutes=1)
REMEMBER_SECONDS = 5.0
REMEMBER_MAX = 1024


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def generate_key() -> tuple[str, str]:
    """Return ``(lookup_prefix, raw_key)``; only the raw key's hash is stored."""
    lookup = secrets.token_hex(6)
    return lookup, f"{KEY_PREFIX}_{lookup}_{secrets.token_urlsafe(32)}"


@dataclass
class _Remembered:
    """An agent key's row and its tenant's, as loaded: each request builds its own
    instances from them, so no mutable model object is shared between requests."""

    key_row: tuple[Any, ...]
    tenant_row: tuple[Any, ...]
    loaded_at: float

    def build(self, labels: Any) -> ApiKey:
        key = ApiKey.from_db("default", _KEY_FIELDS, self.key_row)
        key.tenant = Tenant.from_db("default", _TENANT_FIELDS, self.tenant_row)
        key.labels = labels
        return key


_KEY_FIELDS = [f.attname for f in ApiKey._meta.concrete_fields]
_KEY_ID = _KEY_FIELDS.index("id")
_TENANT_FIELDS = [f.attname for f in Tenant._meta.concrete_fields]
_remembered: dict[str, _Remembered] = {}


def api_key_for_raw(raw: str) -> ApiKey | None:
    """The live key for a raw key, or None.

    An agent key's rows are remembered in this process for ``REMEMBER_SECONDS``; each
    request still reads whether the key is revoked and its current labels, with one
    query by primary key that skips the ORM's query building (the hot path's cost).
    Revocation, expiry and label changes, however they are made, apply to the next
    request. Person keys are loaded whole each time, with their user and membership: a
    deactivated person is refused, and the key carries the person's current labels."""
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX:
        return None
    digest = hash_key(raw)
    remembered = _remembered.get(digest)
    if remembered is not None and time.monotonic() - remembered.loaded_at < REMEMBER_SECONDS:
        labels = _live_labels(remembered.key_row[_KEY_ID])
        if labels is _REVOKED:
            _remembered.pop(digest, None)
            return None
        key = remembered.build(labels)
    else:
        _remembered.pop(digest, None)
        found = _load(parts[1], digest)
        if found is None:
            return None
        key = found
        if key.principal == ApiKey.Principal.AGENT:
            remembered = _remember(digest, key)
    if _touch(key) and remembered is not None:
        remembered.key_row = _row(key, _KEY_FIELDS)
    return key


_REVOKED: Any = object()


def _live_labels(key_id: int) -> Any:
    """The key's current labels, or ``_REVOKED`` when it is revoked, expired (or gone)."""
    table = connection.ops.quote_name(ApiKey._meta.db_table)
    sql = (
        f"SELECT labels FROM {table} WHERE id = %s AND revoked_at IS NULL"  # noqa: S608
        " AND (expires_at IS NULL OR expires_at > %s)"
    )
    with prepared_cursor() as cursor:
        cursor.execute(sql, [key_id, timezone.now()])
        row = cursor.fetchone()
    # Both backends hand JSON columns over as text (Django decodes them in the ORM).
    return _REVOKED if row is None else json.loads(row[0])


def _load(prefix: str, digest: str) -> ApiKey | None:
    key = (
        ApiKey.objects.select_related("tenant", "user", "user__membership")
        .filter(prefix=prefix, revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
        .first()
    )
    if key is None or not hmac.compare_digest(key.key_hash, digest):
        return None
    if key.user is not None and not key.user.is_active:
        return None
    return key


def _row(instance: Any, names: list[str]) -> tuple[Any, ...]:
    return tuple(getattr(instance, name) for name in names)


def _remember(digest: str, key: ApiKey) -> _Remembered:
    if len(_remembered) >= REMEMBER_MAX:
        _remembered.clear()
    remembered = _remembered[digest] = _Remembered(
        key_row=_row(key, _KEY_FIELDS),
        tenant_row=_row(key.tenant, _TENANT_FIELDS),
        loaded_at=time.monotonic(),
    )
    return remembered


def _touch(key: ApiKey) -> bool:
    """Record use at most once a minute, so authentication is not a write per request.

    The UPDATE is conditional, so processes that each think the stamp is old write it
    once between them, and a request that knows it is fresh writes nothing."""
    now = timezone.now()
    if key.last_used_at is not None and now - key.last_used_at <= _LAST_USED_RESOLUTION:
        return False
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - _LAST_USED_RESOLUTION)
    ApiKey.objects.filter(stale, pk=key.pk).update(last_used_at=now)
    key.last_used_at = now
    return True
