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

import orjson
from django.db.models import Q
from django.utils import timezone

from core.models import ApiKey, Tenant
from core.principals import Principal, principal_for_key
from core.sql import prepared_cursor
from memory import cache

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
    """An agent key's row and its tenant's, as loaded: a request that reads the key builds
    its own instances from them. Resolve's hot path, which uses the key with no query of
    its own (``api_key_on_trust``, ``api_key_to_check``), shares one principal built from
    them instead (``_shared_principal``): an answer needs no model instance of its own,
    and nothing on that path writes to it but the use stamp."""

    key_row: tuple[Any, ...]
    tenant_row: tuple[Any, ...]
    loaded_at: float
    # The key's generation in Redis read before the row was (``memory.cache``), or None.
    generation: str | None = None
    shared: Principal | None = None  # built on the first request that uses it so

    def fresh(self) -> bool:
        """Loaded less than ``REMEMBER_SECONDS`` ago."""
        return time.monotonic() - self.loaded_at < REMEMBER_SECONDS

    def build(self, labels: Any) -> ApiKey:
        key = ApiKey.from_db("default", _KEY_FIELDS, self.key_row)
        key.tenant = Tenant.from_db("default", _TENANT_FIELDS, self.tenant_row)
        key.labels = labels
        return key


_KEY_FIELDS = [f.attname for f in ApiKey._meta.concrete_fields]
_KEY_ID = _KEY_FIELDS.index("id")
_KEY_PREFIX = _KEY_FIELDS.index("prefix")
_KEY_EXPIRES_AT = _KEY_FIELDS.index("expires_at")
_KEY_LABELS = _KEY_FIELDS.index("labels")
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
    return api_key_checked(raw)


@dataclass(frozen=True)
class KeyCheck:
    """A remembered key whose check is left to the caller's next statement (resolve's
    candidate statement, with the cache off): it reads the key's labels where it is live
    (``KEY_LABELS_SQL``), and ``confirmed_labels`` decides before anything is answered."""

    key_id: int
    digest: str


# A live key of alias k, by id: %s = id, now. The one written-out form of the rule the ORM
# applies in ``_load``.
_KEYS_TABLE = f'"{ApiKey._meta.db_table}"'
_LIVE_KEY = "k.id = %s AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > %s)"
# The key's labels as text, or NULL when it is revoked, expired or gone: %s = id, now.
KEY_LABELS_SQL = f"(SELECT CAST(k.labels AS text) FROM {_KEYS_TABLE} k WHERE {_LIVE_KEY})"  # noqa: S608
NOT_READ: Any = object()


class KeyRefused(Exception):
    """The key a ``KeyCheck`` stood for is revoked, expired or gone."""


def confirmed_labels(check: KeyCheck, read: str | None) -> Any:
    """The key's current labels from what a statement read (``NOT_READ`` when it returned
    no row: then the key is read now); ``KeyRefused`` when it is no longer live."""
    if read is NOT_READ:
        read = _live(check.key_id)
    elif read is not None:
        read = orjson.loads(read)
    if read is None:
        _remembered.pop(check.digest, None)
        raise KeyRefused
    return read


def api_key_on_trust(raw: str) -> tuple[Principal, tuple[str, str]] | None:
    """The principal of a remembered, unexpired agent key with no query, and the key's
    generation as loaded (key prefix, value), which the caller must confirm in Redis
    before it answers anything (resolve's hot path: ``cache.ReadAlong.key_generation``).
    None when the key is not remembered so (then ``api_key_checked`` reads it).

    Every change of the key's row made through Memgov (its services, the admin, any ORM
    save) moves the generation on after commit, so it applies to the next request; a
    change behind Memgov's back (an UPDATE in SQL) applies once the row is reloaded,
    within ``REMEMBER_SECONDS``."""
    found = _lookup(raw)
    if found is None:
        return None
    _, _, remembered = found
    if remembered is None or remembered.generation is None or not remembered.fresh():
        return None
    expires_at = remembered.key_row[_KEY_EXPIRES_AT]
    if expires_at is not None and expires_at <= timezone.now():
        return None
    return _shared_principal(remembered), (remembered.key_row[_KEY_PREFIX], remembered.generation)


def api_key_to_check(raw: str) -> tuple[Principal, KeyCheck] | None:
    """The shared principal of a remembered, fresh agent key, with no query, and the
    ``KeyCheck`` the caller's next statement must confirm before anything is answered
    (resolve's hot path, cache off: its labels are the remembered ones until then). None
    when the key is not remembered so (then ``api_key_checked`` reads it)."""
    found = _lookup(raw)
    if found is None:
        return None
    _, digest, remembered = found
    if remembered is None or not remembered.fresh():
        return None
    principal = _shared_principal(remembered)
    return principal, KeyCheck(key_id=remembered.key_row[_KEY_ID], digest=digest)


def _shared_principal(remembered: _Remembered) -> Principal:
    """One principal per remembered key, built on first use and shared by the requests
    that use the key with no query of their own: a request needs no model instance of
    its own for it. Its use is stamped (once a minute)."""
    principal = remembered.shared
    if principal is None:
        built = remembered.build(remembered.key_row[_KEY_LABELS])
        principal = remembered.shared = principal_for_key(built)
    key = principal.api_key
    assert key is not None  # noqa: S101 - an agent key's principal carries it
    _touch_remembered(key, remembered)
    return principal


def _lookup(raw: str) -> tuple[str, str, _Remembered | None] | None:
    """A raw key of Memgov's form as its lookup prefix, its digest and what this process
    remembers of it; None for anything else."""
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX:
        return None
    digest = hash_key(raw)
    return parts[1], digest, _remembered.get(digest)


def forget(raw: str) -> None:
    """Drop what this process remembers of a key (its generation moved on)."""
    _remembered.pop(hash_key(raw), None)


def api_key_checked(raw: str, *, for_trust: bool = False) -> ApiKey | None:
    """``api_key_for_raw``, read with one query when the key is remembered. With
    ``for_trust`` (resolve's hot path, cache on), a key loaded here
    is remembered with its generation, so that its next requests take it on trust."""
    found = _lookup(raw)
    if found is None:
        return None
    prefix, digest, remembered = found
    fresh = (
        remembered is not None
        and remembered.fresh()
        and not (for_trust and remembered.generation is None)
    )
    if remembered is not None and fresh:
        labels = _live(remembered.key_row[_KEY_ID])
        if labels is None:
            _remembered.pop(digest, None)
            return None
        key = remembered.build(labels)
    else:
        _remembered.pop(digest, None)
        # Read before the row: a change committed after it moves it on (cache.py's rule).
        generation = cache.key_generation(prefix) if for_trust else None
        loaded = _load(prefix, digest)
        if loaded is None:
            return None
        key = loaded
        if key.principal == ApiKey.Principal.AGENT:
            remembered = _remember(digest, key, generation)
    _touch_remembered(key, remembered)
    return key


def _live(key_id: int) -> Any:
    """The key's current labels, or None when it is revoked, expired (or gone)."""
    # As text on both backends (the prepared cursor would decode a JSON column itself).
    sql = f"SELECT CAST(k.labels AS text) FROM {_KEYS_TABLE} k WHERE {_LIVE_KEY}"  # noqa: S608
    with prepared_cursor() as cursor:
        cursor.execute(sql, [key_id, timezone.now()])
        rows = cursor.fetchall()
    return json.loads(rows[0][0]) if rows else None


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


def _remember(digest: str, key: ApiKey, generation: str | None) -> _Remembered:
    if len(_remembered) >= REMEMBER_MAX:
        _remembered.clear()
    remembered = _remembered[digest] = _Remembered(
        key_row=_row(key, _KEY_FIELDS),
        tenant_row=_row(key.tenant, _TENANT_FIELDS),
        loaded_at=time.monotonic(),
        generation=generation,
    )
    return remembered


def _touch_remembered(key: ApiKey, remembered: _Remembered | None) -> None:
    """``_touch``, and what this process remembers of the key takes the new stamp."""
    if _touch(key) and remembered is not None:
        remembered.key_row = _row(key, _KEY_FIELDS)


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


def key_row_changed(sender: type[ApiKey], instance: ApiKey, **kwargs: Any) -> None:
    """``post_save``/``post_delete`` of a key: its generation moves on after commit (the
    use stamp excepted: ``_touch`` writes it with an UPDATE, and it changes nothing a
    caller is allowed)."""
    if set(kwargs.get("update_fields") or ()) == {"last_used_at"}:
        return
    cache.key_changed_on_commit(instance.prefix)
