"""Hashing of audit events: canonical JSON, sha256 over the previous hash and the payload."""

from __future__ import annotations

import hashlib
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
    payload = {
        "seq": seq,
        "at": at.isoformat(),
        "actor": actor,
        "action": action,
        "target_type": target_type,
        "target_id": target_id,
        "data": data,
    }
    return hashlib.sha256((prev_hash + canonical_json(payload)).encode("utf-8")).hexdigest()
