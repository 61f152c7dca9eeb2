"""The only way an audit row is written: inside the caller's transaction, chained."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.chain import boundary_seal, keyed_event_hash
from audit.keys import AuditKey, keyring
from audit.models import AuditChainHead, AuditEvent
from core.models import Tenant
from core.sql import bound_on_server


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
    return audit_append_many(
        tenant=tenant,
        events=[
            AuditEntry(
                actor=actor,
                action=action,
                target_type=target_type,
                target_id=target_id,
                data=data or {},
            )
        ],
    )[0]


@dataclass(frozen=True)
class AuditEntry:
    actor: str
    action: str
    target_type: str
    target_id: str
    data: dict[str, Any]


def audit_append_many(*, tenant: Tenant, events: list[AuditEntry]) -> list[AuditEvent]:
    """Append several events in order, chained as the same number of ``audit_append``
    calls would chain them, with one head lock, batched inserts and one head update (a
    revalidation chunk records one event per item, an erasure thousands)."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_append must run inside the transaction of the change")
    if not events:
        return []
    key = keyring().current
    head = _locked_chain_head(tenant, key)
    head_fields = ["last_seq", "last_hash"]
    if head.keyed_from is None:  # created by the previous release during its rollout
        _seal(head, key, keyed_from=head.last_seq + 1)
        head_fields += ["keyed_from", "seal", "seal_key_id"]
    rows = []
    seq, prev = head.last_seq, head.last_hash
    for entry in events:
        at = timezone.now()
        seq += 1
        digest = keyed_event_hash(
            key=key.secret,
            tenant_id=tenant.pk,
            prev_hash=prev,
            seq=seq,
            at=at,
            actor=entry.actor,
            action=entry.action,
            target_type=entry.target_type,
            target_id=entry.target_id,
            data=entry.data,
        )
        rows.append(
            AuditEvent(
                tenant=tenant,
                seq=seq,
                at=at,
                actor=entry.actor,
                action=entry.action,
                target_type=entry.target_type,
                target_id=entry.target_id,
                data=entry.data,
                prev_hash=prev,
                hash=digest,
                key_id=key.key_id,
            )
        )
        prev = digest
    if len(rows) > 1:
        with bound_on_server():  # each column one array, sent in binary
            created = AuditEvent.objects.bulk_create(rows, batch_size=1000)
    else:
        created = [_create(rows[0])]
    head.last_seq = seq
    head.last_hash = prev
    head.save(update_fields=head_fields)
    return created


def _create(event: AuditEvent) -> AuditEvent:
    event.save(force_insert=True)
    return event


def _seal(head: AuditChainHead, key: AuditKey, *, keyed_from: int) -> None:
    head.keyed_from = keyed_from
    head.seal = boundary_seal(key=key.secret, tenant_id=head.tenant_id, keyed_from=keyed_from)
    head.seal_key_id = key.key_id


def _locked_chain_head(tenant: Tenant, key: AuditKey) -> AuditChainHead:
    try:
        return AuditChainHead.objects.select_for_update().get(tenant=tenant)
    except AuditChainHead.DoesNotExist:
        try:
            with transaction.atomic():
                head = AuditChainHead(tenant=tenant)
                _seal(head, key, keyed_from=1)  # a new chain is keyed from its start
                head.save(force_insert=True)
        except IntegrityError:
            pass  # a concurrent first append created it
        return AuditChainHead.objects.select_for_update().get(tenant=tenant)
