"""Reads of the audit trail, and the chain verification."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from audit.chain import GENESIS_HASH, event_hash
from audit.models import AuditChainHead, AuditEvent
from core.authority import require_tenant_permission
from core.models import Tenant
from core.principals import Principal

AUDIT_REFUSAL = "Reading the audit trail needs the view_audit permission."


def require_view_audit(principal: Principal) -> None:
    """The audit trail is for auditors: people holding ``view_audit`` on the tenant."""
    require_tenant_permission(principal, "view_audit", AUDIT_REFUSAL)


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
    (a deleted event shows as a gap in ``seq``, an edited one as a hash mismatch); then the
    end must be the chain head's (count and last hash), so a chain emptied or cut short
    fails too. The head is read first and the walk stops at it, so appends committed
    meanwhile are not mistaken for tampering."""
    head = AuditChainHead.objects.filter(tenant=tenant).first()
    head_seq, head_hash = (head.last_seq, head.last_hash) if head else (0, GENESIS_HASH)
    events = AuditEvent.objects.filter(tenant=tenant).order_by("seq")
    if head is not None:
        events = events.filter(seq__lte=head_seq)
    prev_hash = GENESIS_HASH
    checked = 0
    for event in events.iterator(2000):
        if (
            event.seq != checked + 1
            or event.prev_hash != prev_hash
            or event.hash != _rehash(event, prev_hash)
        ):
            return ChainVerification(ok=False, events_checked=checked, first_bad_seq=checked + 1)
        prev_hash = event.hash
        checked += 1
    if checked != head_seq:  # events missing at the end (or present without a head)
        bad = 1 + min(checked, head_seq)
        return ChainVerification(ok=False, events_checked=checked, first_bad_seq=bad)
    if prev_hash != head_hash:  # the last event was replaced wholesale
        return ChainVerification(ok=False, events_checked=checked - 1, first_bad_seq=head_seq)
    return ChainVerification(ok=True, events_checked=checked, first_bad_seq=None)


def _rehash(event: AuditEvent, prev_hash: str) -> str:
    return event_hash(
        prev_hash=prev_hash,
        seq=event.seq,
        at=event.at,
        actor=event.actor,
        action=event.action,
        target_type=event.target_type,
        target_id=event.target_id,
        data=event.data,
    )
