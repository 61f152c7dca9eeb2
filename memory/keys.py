"""API keys: shown once, stored as a sha256 with a lookup prefix, never logged in clear."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.utils import timezone

from memory.models import ApiKey

KEY_PREFIX = "mg"
_LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def generate_key() -> tuple[str, str]:
    """Return ``(lookup_prefix, raw_key)``; only the raw key's hash is stored."""
    lookup = secrets.token_hex(6)
    return lookup, f"{KEY_PREFIX}_{lookup}_{secrets.token_urlsafe(32)}"


def api_key_for_raw(raw: str) -> ApiKey | None:
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX:
        return None
    key = (
        ApiKey.objects.select_related("tenant", "user", "user__membership")
        .filter(prefix=parts[1], revoked_at__isnull=True)
        .first()
    )
    if key is None or not hmac.compare_digest(key.key_hash, hash_key(raw)):
        return None
    _touch(key)
    return key


def _touch(key: ApiKey) -> None:
    """Record use at most once a minute, so authentication is not a write per request."""
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > _LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
