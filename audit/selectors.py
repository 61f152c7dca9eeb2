"""Reads of the audit trail, and the chain verification."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from django.db.models import QuerySet

from audit.chain import GENESIS_HASH, boundary_seal, event_hash, keyed_event_hash
from audit.keys import keyring
from audit.models import AuditChainHead, AuditEvent
from core.authority import require_tenant_permission
from core.models import Tenant
from core.principals import Principal

AUDIT_REFUSAL = "Reading the audit trail needs the view_audit permission."


def require_view_audit(principal: Principal) -> None:
    """The audit trail is for auditors: people holding ``view_audit`` on the tenant."""
    require_tenant_permission(principal, "view_audit", AUDIT_REFUSAL)


class Problem(StrEnum):
    """Why a chain does not verify (``ChainVerification.reason``)."""

    LINK = "link"  # a seq missing or out of place, or a link to a previous hash that differs
    HASH = "hash"  # an event's content no longer gives its hash (plain, or keyed)
    HEAD = "head"  # the chain ends before, after or elsewhere than its head says
    UNBOUND = "unbound"  # unkeyed events after keying, not followed by any keyed event
    SEAL = "seal"  # where keying starts is not proven by the head's seal
    KEY_MISSING = "key_missing"  # a key that linked events (or the seal) is not configured


@dataclass(frozen=True)
class ChainVerification:
    ok: bool
    events_checked: int
    first_bad_seq: int | None
    reason: Problem | None = None
    keyed_from: int | None = None
    missing_key_ids: tuple[str, ...] = ()
    head_hash: str | None = None  # the last event's hash, when the chain verified to its end


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
    meanwhile are not mistaken for tampering.

    From the head's ``keyed_from`` on, a hash is an HMAC under a key outside the database,
    so a rewrite that recomputed every hash and the head is still found (decision 0019).
    An unkeyed event after that point (written by the previous release during the rollout
    that brought keying) is accepted only once a keyed event follows and binds it. An event
    whose key is not configured cannot be checked: it is named in ``missing_key_ids`` and
    the chain is not ``ok``; that is tampering only if the key id was never configured
    (which the operator knows, not the database)."""
    keys = keyring()
    head = AuditChainHead.objects.filter(tenant=tenant).first()
    if head is None:
        head_seq, head_hash, keyed_from = 0, GENESIS_HASH, None
    else:
        head_seq, head_hash, keyed_from = head.last_seq, head.last_hash, head.keyed_from
    missing: list[str] = []

    def result(checked: int, bad: int | None, reason: Problem | None) -> ChainVerification:
        if reason is None and missing:
            reason = Problem.KEY_MISSING
        return ChainVerification(
            ok=reason is None,
            events_checked=checked,
            first_bad_seq=bad,
            reason=reason,
            keyed_from=keyed_from,
            missing_key_ids=tuple(missing),
            head_hash=head_hash if reason is None else None,
        )

    if head is not None:
        seal_key = keys.get(head.seal_key_id) if head.seal_key_id else None
        if keyed_from is None or not head.seal_key_id:
            return result(0, 1, Problem.SEAL)  # no proof: every plain link is suspect
        if seal_key is None:
            missing.append(head.seal_key_id)
        elif not hmac.compare_digest(
            head.seal, boundary_seal(key=seal_key, tenant_id=tenant.pk, keyed_from=keyed_from)
        ):
            return result(0, 1, Problem.SEAL)

    events = AuditEvent.objects.filter(tenant=tenant).order_by("seq")
    if head is not None:
        events = events.filter(seq__lte=head_seq)
    prev_hash = GENESIS_HASH
    checked = 0
    unbound: int | None = None  # the first unkeyed event after keying, not yet bound
    for event in events.iterator(2000):
        if event.seq != checked + 1 or event.prev_hash != prev_hash:
            return result(_before(unbound, checked), unbound or checked + 1, Problem.LINK)
        # Without a head, nothing says where keying starts (and the end check fails).
        keyed = event.seq >= keyed_from if keyed_from is not None else head is None
        if not event.key_id:
            if event.hash != _rehash(event, prev_hash):
                return result(_before(unbound, checked), unbound or event.seq, Problem.HASH)
            if keyed and unbound is None:
                unbound = event.seq
        elif not keyed:  # a keyed link where the sealed start says there can be none
            return result(_before(unbound, checked), unbound or event.seq, Problem.HASH)
        elif (key := keys.get(event.key_id)) is None:
            if event.key_id not in missing:
                missing.append(event.key_id)
        elif not hmac.compare_digest(event.hash, _rehash_keyed(event, key, prev_hash)):
            return result(_before(unbound, checked), unbound or event.seq, Problem.HASH)
        else:
            unbound = None  # this event's key binds every link before it
        prev_hash = event.hash
        checked += 1
    if checked != head_seq:  # events missing at the end (or present without a head)
        bad = 1 + min(checked, head_seq)
        return result(_before(unbound, checked), unbound or bad, Problem.HEAD)
    if prev_hash != head_hash:  # the last event was replaced wholesale
        return result(_before(unbound, checked - 1), unbound or head_seq, Problem.HEAD)
    if unbound is not None:
        return result(unbound - 1, unbound, Problem.UNBOUND)
    return result(checked, None, None)


def audit_hash_at(*, tenant: Tenant, seq: int) -> str | None:
    """The hash of one event, to compare with a checkpoint kept outside the database."""
    return AuditEvent.objects.filter(tenant=tenant, seq=seq).values_list("hash", flat=True).first()


def _before(unbound: int | None, checked: int) -> int:
    """Events verified before the first bad one: none after an unbound unkeyed event."""
    return unbound - 1 if unbound is not None else checked


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


def _rehash_keyed(event: AuditEvent, key: bytes, prev_hash: str) -> str:
    return keyed_event_hash(
        key=key,
        tenant_id=event.tenant_id,
        prev_hash=prev_hash,
        seq=event.seq,
        at=event.at,
        actor=event.actor,
        action=event.action,
        target_type=event.target_type,
        target_id=event.target_id,
        data=event.data,
    )
