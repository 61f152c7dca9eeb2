"""An audit event as every surface shows it: the API's audit list and a subject's export."""

from __future__ import annotations

from typing import Any

from audit.models import AuditEvent
from core.times import iso


def event_representation(event: AuditEvent) -> dict[str, Any]:
    """With both hashes, so a reader can check the event's place in its tenant's chain,
    and the id of the key whose HMAC the hash is (null: a plain sha256, before keying)."""
    return {
        "seq": event.seq,
        "at": iso(event.at),
        "actor": event.actor,
        "action": event.action,
        "target_type": event.target_type,
        "target_id": event.target_id,
        "data": event.data,
        "prev_hash": event.prev_hash,
        "hash": event.hash,
        "key_id": event.key_id or None,
    }
