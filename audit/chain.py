"""Hashing of audit events: canonical JSON, linked to the previous event's hash.

Events written before the chain was keyed are linked by plain sha256 (``event_hash``):
anyone with database access can recompute those. From the chain's ``keyed_from`` on,
each link is an HMAC-SHA256 under a key held outside the database (``keyed_event_hash``,
``audit.keys``), which a rewrite without the key cannot recompute (docs/decisions/0019).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime
from typing import Any

GENESIS_HASH = "0" * 64


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    """sha256 of a value, so the audit trail can prove what changed without holding it."""
    raw = value if isinstance(value, str) else canonical_json(value)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _payload(
    *,
    seq: int,
    at: datetime,
    actor: str,
    action: str,
    target_type: str,
    target_id: str,
    data: dict[str, Any],
) -> dict[str, Any]:
    return {
        "seq": seq,
        "at": at.isoformat(),
        "actor": actor,
        "action": action,
        "target_type": target_type,
        "target_id": target_id,
        "data": data,
    }


def event_hash(
    *,
    prev_hash: str,
    seq: int,
    at: datetime,
    actor: str,
    action: str,
    target_type: str,
    target_id: str,
    data: dict[str, Any],
) -> str:
    """The plain link of an event written before its chain was keyed."""
    payload = _payload(
        seq=seq,
        at=at,
        actor=actor,
        action=action,
        target_type=target_type,
        target_id=target_id,
        data=data,
    )
    return hashlib.sha256((prev_hash + canonical_json(payload)).encode("utf-8")).hexdigest()


def keyed_event_hash(
    *,
    key: bytes,
    tenant_id: int,
    prev_hash: str,
    seq: int,
    at: datetime,
    actor: str,
    action: str,
    target_type: str,
    target_id: str,
    data: dict[str, Any],
) -> str:
    """HMAC-SHA256 over what ``event_hash`` covers, plus the tenant, so an event cannot be
    moved into another tenant's chain (whose events are keyed alike)."""
    payload = _payload(
        seq=seq,
        at=at,
        actor=actor,
        action=action,
        target_type=target_type,
        target_id=target_id,
        data=data,
    )
    payload["tenant"] = tenant_id
    message = (prev_hash + canonical_json(payload)).encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def boundary_seal(*, key: bytes, tenant_id: int, keyed_from: int) -> str:
    """The chain head's proof of where keying starts: without it, someone with database
    access could move the start past the end and rewrite every event with plain hashes."""
    message = canonical_json({"tenant": tenant_id, "keyed_from": keyed_from}).encode("utf-8")
    return hmac.new(key, b"memgov audit keyed_from\n" + message, hashlib.sha256).hexdigest()
