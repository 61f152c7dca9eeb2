"""The status machine of a version: every transition (``version_transition``), and those
that end or begin use: activation, retirement, revocation, expiry.

Each runs in one transaction with the lineage locked; flags the tasks that used what
stopped being true; bumps the subject's cache generation after commit, which Django runs
before the request (or task) returns."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from audit.chain import digest
from audit.services import AuditEntry, audit_append, audit_append_many
from memory import events, generations
from memory.effects import after_checks_failed, after_retired
from memory.models import OPEN_STATUSES, MemoryItem, MemoryVersion, RetrievalUse, Status, TaskFlag

IN_USE_OR_OPEN = (Status.ACTIVE, *OPEN_STATUSES)
# Transitions of one version that the tenant's webhooks hear about; the end of use of a
# lineage (retired, expired) is one event per item, sent by ``end_use``.
TRANSITION_EVENTS = {
    Status.PENDING_REVIEW: events.MEMORY_PENDING_REVIEW,
    Status.ACTIVE: events.MEMORY_ACTIVATED,
    Status.CHECKS_FAILED: events.MEMORY_CHECKS_FAILED,
    Status.REJECTED: events.MEMORY_REJECTED,
}
END_OF_USE_EVENTS = {Status.RETIRED: events.MEMORY_RETIRED, Status.EXPIRED: events.MEMORY_EXPIRED}


def version_transition(
    *,
    version: MemoryVersion,
    to: Status,
    actor: str,
    reason: str = "",
    at: datetime | None = None,
    event_reason: str | None = None,
    **audit_data: Any,
) -> MemoryVersion:
    """Move a locked version to a new status inside the caller's transaction, audited.

    ``event_reason``: what the tenant's webhooks are told instead of ``reason`` when the
    reason quotes content (a clarified value): events carry ids, never values.

    System times follow the status: becoming active sets ``activated_at``; leaving active
    sets ``deactivated_at``, which is what ``known_at`` queries read."""
    now = at or timezone.now()
    previous = version.status
    version.status = to
    version.status_reason = reason
    version.status_changed_at = now
    update = ["status", "status_reason", "status_changed_at"]
    if to == Status.ACTIVE:
        # A version suspended by revalidation and rechecked is in use again from now on
        # (its earlier period of use stays in the audit trail, not in these two fields).
        version.activated_at = now
        version.deactivated_at = None
        update += ["activated_at", "deactivated_at"]
    elif previous == Status.ACTIVE:
        version.deactivated_at = now
        update.append("deactivated_at")
    version.save(update_fields=update)
    audit_append(
        tenant=version.tenant,
        actor=actor,
        action=f"memory.{to}",
        target_type="memory",
        target_id=version.item_id,
        data={
            "version": version.number,
            "from": previous,
            "to": str(to),
            "reason_sha256": digest(reason) if reason else None,
            **audit_data,
        },
    )
    if to in TRANSITION_EVENTS:
        events.event_emit(
            tenant=version.tenant,
            event_type=TRANSITION_EVENTS[to],
            data=events.version_data(
                version,
                previous=str(previous),
                reason=reason if event_reason is None else event_reason,
            ),
        )
    return version


def bump_on_commit(versions: Iterable[MemoryVersion]) -> None:
    generations.invalidate_subject_on_commit((v.tenant_id, v.subject_id) for v in versions)


def flag_tasks(*, item: MemoryItem, event: str, reason: str, at: datetime) -> list[str]:
    """Tasks that were told about this item must re-verify before acting on it."""
    uses = RetrievalUse.objects.filter(tenant_id=item.tenant_id, item=item)
    used = sorted(set(uses.values_list("task_id", "version_number")))
    TaskFlag.objects.bulk_create(
        [
            TaskFlag(
                tenant_id=item.tenant_id,
                task_id=task,
                item=item,
                version_number=number,
                event=event,
                reason=reason,
                at=at,
            )
            for task, number in used
        ],
        ignore_conflicts=True,
    )
    tasks: dict[str, list[int]] = {}
    for task, number in used:
        tasks.setdefault(task, []).append(number)
    tenant = item.tenant
    for task, numbers in sorted(tasks.items()):
        events.event_emit(
            tenant=tenant,
            event_type=events.TASK_NEEDS_REVERIFICATION,
            data={
                "task_id": task,
                "memory_id": item.pk,
                "versions": numbers,
                "event": event,
                "reason": events.reason_text(reason),
            },
        )
    return sorted(tasks)


def locked_versions(item: MemoryItem, statuses: Iterable[str]) -> list[MemoryVersion]:
    """Lock the lineage first, then its versions: one lock order everywhere, no deadlock."""
    MemoryItem.objects.select_for_update(no_key=True).get(pk=item.pk)
    return list(
        MemoryVersion.objects.select_for_update(of=("self",), no_key=True)
        .filter(item=item, status__in=list(statuses))
        .select_related("tenant", "owner")
        .order_by("number")
    )


def end_use(
    *,
    item: MemoryItem,
    versions: list[MemoryVersion],
    to: Status,
    actor: str,
    reason: str,
    flag_event: str | None,
    at: datetime | None = None,
    announce: bool = True,
) -> list[str]:
    """Move versions out of use inside the caller's transaction; returns flagged tasks.
    ``announce=False`` (erasure) sends owners no retirement email about the content."""
    now = at or timezone.now()
    for version in versions:
        version_transition(version=version, to=to, actor=actor, reason=reason, at=now)
    flagged = []
    if flag_event and any(v.activated_at for v in versions):
        flagged = flag_tasks(item=item, event=flag_event, reason=reason, at=now)
    bump_on_commit(versions)
    if to == Status.RETIRED and announce:
        after_retired(versions)
    if versions and to in END_OF_USE_EVENTS:
        events.event_emit(
            tenant=item.tenant,
            event_type=END_OF_USE_EVENTS[to],
            data={**events.versions_data(versions, reason=reason), "flagged_tasks": flagged},
        )
    return flagged


def end_use_of_subject(
    *,
    tenant_id: int,
    subject_id: str,
    to: Status,
    actor: str,
    reason: str,
    flag_event: str,
    at: datetime,
) -> int:
    """``end_use`` for every lineage of one subject at once, inside the caller's
    transaction (an erasure): the lineages and their versions in use or open are locked
    (lineages first, as everywhere), moved in one update per kind, audited as one
    ``memory.<to>`` event per version (chained in one batch), the tasks that used them
    flagged in one insert, and the subject's cache bumped once. Owners are not mailed.
    Returns the number of lineages whose use ended."""
    items = MemoryItem.objects.filter(tenant_id=tenant_id, subject_id=subject_id)
    list(items.select_for_update(no_key=True).order_by("pk").values_list("pk", flat=True))
    rows = list(
        MemoryVersion.objects.select_for_update(of=("self",), no_key=True)
        .filter(tenant_id=tenant_id, subject_id=subject_id, status__in=IN_USE_OR_OPEN)
        .order_by("item_id", "number")
        .values_list("pk", "item_id", "number", "status", "activated_at")
    )
    if not rows:
        generations.invalidate_subject_on_commit([(tenant_id, subject_id)])
        return 0
    for start in range(0, len(rows), 1000):
        chunk = rows[start : start + 1000]
        MemoryVersion.objects.filter(pk__in=[r[0] for r in chunk]).update(
            status=to, status_reason=reason, status_changed_at=at
        )
        in_use = [r[0] for r in chunk if r[3] == Status.ACTIVE]
        MemoryVersion.objects.filter(pk__in=in_use).update(deactivated_at=at)
    tenant = MemoryItem.objects.select_related("tenant").get(pk=rows[0][1]).tenant
    audit_append_many(
        tenant=tenant,
        events=[
            AuditEntry(
                actor=actor,
                action=f"memory.{to}",
                target_type="memory",
                target_id=item_id,
                data={
                    "version": number,
                    "from": status,
                    "to": str(to),
                    "reason_sha256": digest(reason),
                },
            )
            for _, item_id, number, status, _ in rows
        ],
    )
    used = sorted({r[1] for r in rows if r[4] is not None})
    for start in range(0, len(used), 1000):
        uses = (
            RetrievalUse.objects.filter(tenant_id=tenant_id, item_id__in=used[start : start + 1000])
            .values_list("task_id", "item_id", "version_number")
            .distinct()
        )
        TaskFlag.objects.bulk_create(
            [
                TaskFlag(
                    tenant_id=tenant_id,
                    task_id=task,
                    item_id=item_id,
                    version_number=number,
                    event=flag_event,
                    reason=reason,
                    at=at,
                )
                for task, item_id, number in uses
            ],
            ignore_conflicts=True,
            batch_size=1000,
        )
    generations.invalidate_subject_on_commit([(tenant_id, subject_id)])
    return len({r[1] for r in rows})


def lock_subject_field(version: MemoryVersion) -> None:
    """Serialize activations per (tenant, subject, field) until the transaction ends: a
    PostgreSQL advisory transaction lock on a stable 64-bit hash. SQLite lets one writer
    at a time in anyway, so it needs none."""
    if connection.vendor != "postgresql":
        return
    key = activation_lock_key(version.tenant_id, version.subject_id, version.field)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def activation_lock_key(tenant_id: int, subject_id: str | None, field: str) -> int:
    """The advisory lock's stable 64-bit key for one (tenant, subject, field)."""
    name = f"activation:{tenant_id}:{subject_id}:{field}"
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _locked_while_checking(version_id: int) -> MemoryVersion | None:
    """Lock the lineage, then the version (always in that order: no deadlock with the
    other transitions); None when the version is no longer ``checking``, so a check run
    delivered twice concludes once."""
    item_id = MemoryVersion.objects.values_list("item_id", flat=True).get(pk=version_id)
    MemoryItem.objects.select_for_update(no_key=True).get(pk=item_id)
    version = (
        MemoryVersion.objects.select_for_update(of=("self",), no_key=True)
        .select_related("tenant", "item")
        .get(pk=version_id)
    )
    return version if version.status == Status.CHECKING else None


def version_activate(
    *,
    version_id: int,
    actor: str,
    regression: Callable[[MemoryVersion], str | None] | None = None,
) -> bool:
    """Compare-and-set: only a version still ``checking`` becomes active, once; the lineage's
    previous active version becomes ``superseded`` in the same transaction.

    ``regression`` runs under the (tenant, subject, field) lock, right before the switch,
    so two items of one field cannot both pass it and activate into a conflict; a failure
    it reports ends the version in ``checks_failed`` instead."""
    with transaction.atomic(durable=True):
        version = _locked_while_checking(version_id)
        if version is None:
            return False
        item = version.item
        lock_subject_field(version)
        failure = regression(version) if regression is not None else None
        if failure is not None:
            version_transition(
                version=version, to=Status.CHECKS_FAILED, actor=actor, reason=failure
            )
            after_checks_failed(version)
            return False
        previous = list(
            MemoryVersion.objects.select_for_update(no_key=True).filter(
                item=item, status=Status.ACTIVE
            )
        )
        reason = f"superseded by version {version.number}"
        # One instant for the handover: a known_at between two clock readings must not
        # find neither version in use.
        now = timezone.now()
        end_use(
            item=item,
            versions=previous,
            to=Status.SUPERSEDED,
            actor=actor,
            reason=reason,
            flag_event="superseded",
            at=now,
        )
        version_transition(
            version=version,
            to=Status.ACTIVE,
            actor=actor,
            reason="all scenario checks passed",
            at=now,
        )
        bump_on_commit([version])
    return True


def version_fail_checks(*, version_id: int, actor: str, detail: str) -> bool:
    with transaction.atomic(durable=True):
        version = _locked_while_checking(version_id)
        if version is None:
            return False
        version_transition(version=version, to=Status.CHECKS_FAILED, actor=actor, reason=detail)
        after_checks_failed(version)
    return True


def versions_expire(*, now: datetime) -> list[str]:
    """Mark what passed its ``expires_at`` as expired (it was unused from that instant on:
    the resolver checks expiry itself; this records it and flags the tasks)."""
    due = (
        MemoryVersion.objects.filter(status__in=IN_USE_OR_OPEN, expires_at__lte=now)
        .values_list("item_id", flat=True)
        .distinct()
    )
    expired: list[str] = []
    for item_id in list(due):
        with transaction.atomic(durable=True):
            item = MemoryItem.objects.get(pk=item_id)
            versions = [
                v
                for v in locked_versions(item, IN_USE_OR_OPEN)
                if v.expires_at is not None and v.expires_at <= now
            ]
            if versions:
                end_use(
                    item=item,
                    versions=versions,
                    to=Status.EXPIRED,
                    actor="system:expiry",
                    reason="expires_at passed",
                    flag_event="expired",
                )
                expired.append(item_id)
    return expired
