"""The only way an audit row is written: inside the caller's transaction, chained."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.chain import event_hash
from audit.models import AuditChainHead, AuditEvent
from core.models import Tenant


def audit_append(
    *,
    tenant: Tenant,
    actor: str,
    action: str,
    target_type: str,
    target_id: str,
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event to the tenant's chain; the caller's transaction makes it atomic
    with the change it records, and the locked chain head serializes appends per tenant."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_append must run inside the transaction of the change")
    head = _locked_chain_head(tenant)
    at = timezone.now()
    seq = head.last_seq + 1
    payload = data or {}
    digest = event_hash(
        prev_hash=head.last_hash,
        seq=seq,
        at=at,
        actor=actor,
        action=action,
        target_type=target_type,
        target_id=target_id,
        data=payload,
    )
    event = AuditEvent.objects.create(
        tenant=tenant,
        seq=seq,
        at=at,
        actor=actor,
        action=action,
        target_type=target_type,
        target_id=target_id,
        data=payload,
        prev_hash=head.last_hash,
        hash=digest,
    )
    head.last_seq = seq
    head.last_hash = event.hash
    head.save(update_fields=["last_seq", "last_hash"])
    return event


def audit_append_many(
    *,
    tenant: Tenant,
    actor: str,
    events: Sequence[tuple[str, str, str, dict[str, Any]]],
) -> int:
    """Append ``(action, target_type, target_id, data)`` events in order, chained exactly
    as ``audit_append`` would one by one, with the head locked and written once and the
    rows inserted in batches: a change of thousands of rows (an erasure) stays fast."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_append_many must run inside the transaction of the change")
    if not events:
        return 0
    head = _locked_chain_head(tenant)
    at = timezone.now()
    seq, prev = head.last_seq, head.last_hash
    rows = []
    for action, target_type, target_id, data in events:
        seq += 1
        digest = event_hash(
            prev_hash=prev,
            seq=seq,
            at=at,
            actor=actor,
            action=action,
            target_type=target_type,
            target_id=target_id,
            data=data,
        )
        rows.append(
            AuditEvent(
                tenant=tenant,
                seq=seq,
                at=at,
                actor=actor,
                action=action,
                target_type=target_type,
                target_id=target_id,
                data=data,
                prev_hash=prev,
                hash=digest,
            )
        )
        prev = digest
    AuditEvent.objects.bulk_create(rows, batch_size=1000)
    head.last_seq, head.last_hash = seq, prev
    head.save(update_fields=["last_seq", "last_hash"])
    return len(rows)


def _locked_chain_head(tenant: Tenant) -> AuditChainHead:
    try:
        return AuditChainHead.objects.select_for_update().get(tenant=tenant)
    except AuditChainHead.DoesNotExist:
        try:
            with transaction.atomic():
                AuditChainHead.objects.create(tenant=tenant)
        except IntegrityError:
            pass  # a concurrent first append created it
        return AuditChainHead.objects.select_for_update().get(tenant=tenant)
