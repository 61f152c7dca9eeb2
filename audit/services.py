"""The only way an audit row is written: inside the caller's transaction, chained."""

from __future__ import annotations

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
