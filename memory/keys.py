"""API keys: shown once, stored as a sha256 with a lookup prefix, never logged in clear.

Every request reads its key's row (one indexed query by prefix), so a revoked, expired or
relabelled key, or a deactivated person, is refused or narrowed on its very next request
in every process, however the row was changed."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from core.models import ApiKey

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
    key = (
        ApiKey.objects.select_related("tenant", "user", "user__membership")
        .filter(prefix=parts[1], revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now()))
        .first()
    )
    if key is None or not hmac.compare_digest(key.key_hash, hash_key(raw)):
        return None
    if key.user is not None and not key.user.is_active:
        return None
    touch(key)
    return key


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
