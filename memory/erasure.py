"""Erasure of a subject (docs/design.md, Retention and erasure; docs/api.md, Retention and erasure).

``erasure_start`` runs in the request: in one transaction it retires every item about
the subject (``lifecycle.end_use_of_subject``, ``end_use`` for all lineages at once: one
audited transition per version, tasks flagged, the cache generation bumped in the
transaction and in Redis after commit, so no resolve returns them once the 202 is out),
turns the name and aliases into a tombstone, records an ``Erasure`` row and asks,
through the outbox, for ``erasure_continue`` to run in a worker. What needs her names is
done there too, since the tombstone ends them (``memory.erasure_copies``): lineages never
linked to a subject whose mention names her are linked to her first, so that they are
retired and purged as hers and the sources they cite count as hers; the sources cited only
as evidence of her aliases are purged; stored replays quoting her names are deleted.

``erasure_continue`` works in phases, each batch in its own transaction: the ``Erasure``
row is locked, the batch changes rows that still need it (``erased_at IS NULL``, content
not yet purged, …), and the counts of what *this* batch changed are added to the row in
the same transaction. A worker killed anywhere loses at most an uncommitted batch (its
changes and its counts together), and a run delivered twice finds nothing left to count:
the counts are exact after any crash and restart.

The phases, what each erases and how the layers above add theirs, are in
``memory.erasure_phases``.

The audit chain is untouched: audit events hold ids, statuses and digests, never values,
statements, contents or names (``memory.proposals._version_audit_data``,
``memory.sources``, ``memory.entities``), so nothing in it needs redaction and ``verify``
passes over the whole chain after an erasure.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.chain import digest
from audit.services import audit_append
from core.authority import require_erase
from core.errors import InvalidContent
from core.kinds import OutboxKind
from core.models import IdempotencyRecord
from core.outbox import outbox_write
from core.principals import Principal
from memory import erasure_copies, events, generations, semantic
from memory.erasure_phases import (
    COUNTS,
    EXTRA_PHASES,
    STEPS,
    TOMBSTONE,
    own_reason,
    phases,
    references_to,
)
from memory.lifecycle import IN_USE_OR_OPEN, end_use, end_use_of_subject, locked_versions
from memory.models import Entity, Erasure, MemoryItem, MemoryVersion, Status
from memory.selectors import access_entity

logger = logging.getLogger(__name__)

MAX_REASON = 2000


def erasure_start(*, principal: Principal, subject_id: str, reason: str) -> Erasure:
    """Retire the subject's items at once and start the erasure; a subject already being
    (or already) erased answers with its erasure, so a retried request starts nothing new."""
    require_erase(principal)
    reason = (reason or "").strip() if isinstance(reason, str) else ""
    if not reason:
        raise InvalidContent({"reason": ["say why the subject is erased"]})
    if len(reason) > MAX_REASON:
        raise InvalidContent({"reason": [f"at most {MAX_REASON} characters"]})
    entity = access_entity(principal, subject_id)
    with transaction.atomic(durable=True):
        entity = Entity.objects.select_for_update().get(pk=entity.pk)
        existing = Erasure.objects.filter(subject=entity).order_by("started_at").first()
        if existing is not None:
            if existing.status == Erasure.Status.FAILED:
                existing.status = Erasure.Status.RUNNING
                existing.error = ""
                existing.save(update_fields=["status", "error"])
                outbox_write(
                    kind=OutboxKind.ERASURE_RUN,
                    payload={"erasure_id": existing.pk},
                    tenant=entity.tenant,
                )
            return existing
        now = timezone.now()
        erasure = Erasure.objects.create(
            tenant=principal.tenant,
            subject=entity,
            requested_by=principal.user,
            actor=principal.name,
            reason=reason,
            name_sha256=digest(entity.name_normalized),
            counts=dict.fromkeys(COUNTS, 0),
            phase=phases()[0],
            started_at=now,
            progress_at=now,
        )
        # Her names are known only until the tombstone below: what needs them is done now.
        names = erasure_copies.names_of(entity)
        mentions = erasure_copies.link_mentions(entity, erasure_copies.mentions_of(entity, names))
        retired = end_use_of_subject(
            tenant_id=principal.tenant.pk,
            subject_id=entity.pk,
            to=Status.RETIRED,
            actor=principal.name,
            reason=own_reason(erasure),
            flag_event="retired",
            at=now,
        )
        retired += _end_use_of_referencing(erasure, entity, now)
        items = MemoryItem.objects.filter(tenant=principal.tenant, subject=entity)
        evidence = erasure_copies.alias_sources_to_purge(entity)
        purged = erasure_copies.purge_sources(evidence)
        aliases, _ = entity.aliases.all().delete()
        # Her vectors encode her names and values: gone with the names, before the 202.
        semantic.forget(
            entity_ids=[entity.pk],
            version_ids=list(
                MemoryVersion.objects.filter(item__in=items).values_list("pk", flat=True)
            ),
        )
        items.exclude(subject_mention="").update(subject_mention="")
        entity.name, entity.name_normalized, entity.external_ref = TOMBSTONE, "", ""
        entity.erased_at = now
        entity.save(update_fields=["name", "name_normalized", "external_ref", "erased_at"])
        # Replays quoting her names (or her aliases' evidence); those naming her ids, her
        # items or her sources go in the ``idempotency`` phase.
        replays, _ = IdempotencyRecord.objects.filter(
            pk__in=erasure_copies.replays_naming(principal.tenant.pk, [*names, *evidence])
        ).delete()
        erasure.counts = {
            **erasure.counts,
            "items_retired": retired,
            "aliases": aliases,
            "mentions": len(mentions),
            "sources_purged": purged,
            "idempotency_records": replays,
        }
        erasure.save(update_fields=["counts"])
        audit_append(
            tenant=principal.tenant,
            actor=principal.name,
            action="subject.erasure_started",
            target_type="entity",
            target_id=entity.pk,
            data={
                "erasure": erasure.pk,
                "reason_sha256": digest(reason),
                "items_retired": retired,
                "aliases": aliases,
                # Which lineages the erasure made hers: ids only, as every event (0008).
                "mentions": mentions,
            },
        )
        # No item may be left to bump (a subject with none): its answers end here too.
        generations.invalidate_subject_on_commit([(principal.tenant.pk, entity.pk)])
        outbox_write(
            kind=OutboxKind.ERASURE_RUN, payload={"erasure_id": erasure.pk}, tenant=entity.tenant
        )
    return erasure


def erasure_continue(erasure_id: str) -> Erasure:
    """Run the erasure to its end, one committed batch at a time (idempotent, resumable)."""
    while True:
        with transaction.atomic(durable=True):
            erasure = (
                Erasure.objects.select_for_update(of=("self",))
                .select_related("tenant", "subject")
                .get(pk=erasure_id)
            )
            if erasure.status != Erasure.Status.RUNNING:
                return erasure
            more = {**STEPS, **EXTRA_PHASES}[erasure.phase](erasure)
            if not more:
                order = phases()
                erasure.phase = order[order.index(erasure.phase) + 1]
                erasure.cursor = ""
            erasure.progress_at = timezone.now()
            if erasure.phase == "done":
                _finish(erasure)
            erasure.save()
            logger.info("erasure %s: %s %s", erasure.pk, erasure.phase, erasure.counts)
            if erasure.status == Erasure.Status.DONE:
                return erasure


def erasure_fail(erasure_id: str, error: str) -> None:
    """A batch raised something a retry will not fix: say so on the row (the 202's GET)."""
    Erasure.objects.filter(pk=erasure_id, status=Erasure.Status.RUNNING).update(
        status=Erasure.Status.FAILED, error=error[:2000]
    )


def _end_use_of_referencing(erasure: Erasure, entity: Entity, at: Any) -> int:
    """Facts of other subjects whose value references the erased entity name her too
    (memory.references): their lineages leave use with hers, one audited transition per
    version, and the ``versions`` phase purges them. Returns the lineages ended."""
    versions = MemoryVersion.objects.filter(
        pk__in=references_to(erasure.tenant_id, entity).values("version_id"),
        status__in=IN_USE_OR_OPEN,
    ).exclude(subject=entity)
    items = MemoryItem.objects.filter(pk__in=versions.values("item_id")).order_by("pk")
    ended = 0
    for item in items.select_related("tenant"):
        locked = locked_versions(item, IN_USE_OR_OPEN)
        if locked:
            end_use(
                item=item,
                versions=locked,
                to=Status.RETIRED,
                actor=erasure.actor,
                reason=own_reason(erasure),
                flag_event="retired",
                at=at,
                announce=False,
            )
            ended += 1
    return ended


def _finish(erasure: Erasure) -> None:
    now = timezone.now()
    erasure.status = Erasure.Status.DONE
    erasure.finished_at = now
    reason_sha256 = digest(erasure.reason)
    erasure.reason = ""  # the officer's words may name her; their digest is audited
    audit_append(
        tenant=erasure.tenant,
        actor=erasure.actor,
        action="subject.erased",
        target_type="entity",
        target_id=erasure.subject_id,
        data={
            "erasure": erasure.pk,
            "counts": erasure.counts,
            "kept_sources": [k["source"] for k in erasure.kept],
            "name_sha256": erasure.name_sha256,
            "reason_sha256": reason_sha256,
        },
    )
    events.event_emit(
        tenant=erasure.tenant,
        event_type=events.SUBJECT_ERASED,
        data={"subject": erasure.subject_id, "erasure": erasure.pk, "counts": erasure.counts},
    )
    if erasure.requested_by_id is not None:
        outbox_write(
            kind=OutboxKind.ERASURE_DONE, payload={"erasure_id": erasure.pk}, tenant=erasure.tenant
        )


def stalled_erasures(*, stalled_after: Any) -> list[str]:
    """Running erasures without progress for a while (a lost message, a dead worker)."""
    since = timezone.now() - stalled_after
    return list(
        Erasure.objects.filter(status=Erasure.Status.RUNNING, progress_at__lt=since).values_list(
            "pk", flat=True
        )
    )
