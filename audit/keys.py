"""The keys of the audit chain, held outside the database (docs/decisions/0019).

``MEMGOV_AUDIT_KEYS`` is ``"kid1:secret1,kid2:secret2"``: the first key links new events,
the others are kept to verify the events they linked. Whatever it holds, keys derived
from ``SECRET_KEY`` and each of ``SECRET_KEY_FALLBACKS`` are kept for verification too,
and the one derived from ``SECRET_KEY`` links new events when the setting is empty, so a
deployment without the setting (``make run``, the tests) keys its chain all the same.

The derivation: ``key = HMAC-SHA256(key=SECRET_KEY as UTF-8, msg=DERIVATION_LABEL)``, its
key id ``"sk-"`` and the first ten hex digits of ``sha256(key)``; a rotated
``SECRET_KEY`` therefore gives a new key id, and the old one stays verifiable for as long
as the old secret is listed in ``SECRET_KEY_FALLBACKS``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

DERIVATION_LABEL = b"memgov audit chain key v1"
DERIVED_PREFIX = "sk-"
MIN_SECRET_LENGTH = 32
_KEY_ID = re.compile(r"[A-Za-z0-9_.-]{1,32}")


@dataclass(frozen=True)
class AuditKey:
    key_id: str
    secret: bytes


@dataclass(frozen=True)
class Keyring:
    current: AuditKey
    by_id: dict[str, bytes]

    def get(self, key_id: str) -> bytes | None:
        return self.by_id.get(key_id)


def derived_key(secret_key: str) -> AuditKey:
    """The key a deployment has without ``MEMGOV_AUDIT_KEYS``: from ``SECRET_KEY``."""
    secret = hmac.new(secret_key.encode("utf-8"), DERIVATION_LABEL, hashlib.sha256).digest()
    return AuditKey(DERIVED_PREFIX + hashlib.sha256(secret).hexdigest()[:10], secret)


def parse_audit_keys(raw: str) -> list[AuditKey]:
    """``"kid1:secret1,kid2:secret2"`` in order; anything malformed stops the process."""
    keys: list[AuditKey] = []
    for number, item in enumerate((part.strip() for part in raw.split(",")), start=1):
        if not item:
            continue
        key_id, colon, secret = item.partition(":")
        key_id = key_id.strip()
        where = f"MEMGOV_AUDIT_KEYS, key {number}"
        if not colon or not _KEY_ID.fullmatch(key_id):
            raise ImproperlyConfigured(
                f"{where}: write it as kid:secret, the kid 1-32 of A-Z a-z 0-9 _ . -"
            )
        if key_id.startswith(DERIVED_PREFIX):
            raise ImproperlyConfigured(f"{where}: {DERIVED_PREFIX!r} names derived keys only")
        if any(key.key_id == key_id for key in keys):
            raise ImproperlyConfigured(f"{where}: key id {key_id!r} is listed twice")
        if len(secret) < MIN_SECRET_LENGTH:
            raise ImproperlyConfigured(
                f"{where} ({key_id}): the secret must be at least {MIN_SECRET_LENGTH} characters"
            )
        keys.append(AuditKey(key_id, secret.encode("utf-8")))
    return keys


def keyring() -> Keyring:
    """The keys as the settings say now (cached per distinct settings, so a test that
    overrides them sees its own)."""
    return _keyring(
        str(settings.SECRET_KEY),
        tuple(str(s) for s in getattr(settings, "SECRET_KEY_FALLBACKS", ())),
        str(getattr(settings, "MEMGOV_AUDIT_KEYS", "") or ""),
    )


@lru_cache(maxsize=8)
def _keyring(secret_key: str, fallbacks: tuple[str, ...], configured: str) -> Keyring:
    listed = parse_audit_keys(configured)
    derived = [derived_key(secret) for secret in (secret_key, *fallbacks)]
    by_id = {key.key_id: key.secret for key in derived}
    by_id.update((key.key_id, key.secret) for key in listed)
    return Keyring(current=listed[0] if listed else derived[0], by_id=by_id)
