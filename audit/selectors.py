"""Reads of the audit trail, and the chain verification."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from audit.chain import GENESIS_HASH, event_hash
from audit.models import AuditEvent
from memory.models import Tenant


@dataclass(frozen=True)
class ChainVerification:
    ok: bool
    events_checked: int
    first_bad_seq: int | None


def audit_events(
    *,
    tenant: Tenant,
    target: str | None = None,
    actor: str | None = None,
    action: str | None = None,
    since: datetime | None = None,
) -> QuerySet[AuditEvent]:
    events = AuditEvent.objects.filter(tenant=tenant)
    if target:
        events = events.filter(target_id=target)
    if actor:
        events = events.filter(actor=actor)
    if action:
        events = events.filter(action=action)
    if since:
        events = events.filter(at__gte=since)
    return events.order_by("seq")


def audit_verify(*, tenant: Tenant) -> ChainVerification:
    """Walk the chain in order; the first event whose link or hash does not hold is reported
    (a deleted event shows as a gap in ``seq``, an edited one as a hash mismatch)."""
    prev_hash = GENESIS_HASH
    expected_seq = 1
    checked = 0
    for event in AuditEvent.objects.filter(tenant=tenant).order_by("seq").iterator(2000):
        recomputed = event_hash(
            prev_hash=prev_hash,
            seq=event.seq,
            at=event.at,
            actor=event.actor,
            action=event.action,
            target_type=event.target_type,
            target_id=event.target_id,
            data=event.data,
        )
        if event.seq != expected_seq or event.prev_hash != prev_hash or event.hash != recomputed:
            return ChainVerification(ok=False, events_checked=checked, first_bad_seq=expected_seq)
        prev_hash = event.hash
        expected_seq += 1
        checked += 1
    return ChainVerification(ok=True, events_checked=checked, first_bad_seq=None)
