"""Reads an agent needs to find its way (issue 35): its own proposals and why each is
where it is, the entity kinds in use, and entities by another system's id."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Exists, OuterRef, Prefetch, Q

from core.principals import Principal
from core.times import iso
from memory.models import Clarification, Entity, MemoryVersion, Status
from memory.search import one_line
from memory.selectors import versions_with_details
from memory.visibility import VisibleTo

MAX_MATCHES = 20


def proposals_of(
    principal: Principal, *, status: str | None, after: int | None, limit: int
) -> list[MemoryVersion]:
    """Versions the caller proposed (as this agent, or as this person), oldest first: those
    the caller may see now, as ``GET /memories/{id}`` would show them (the version and its
    memory's head), not those it could see when it proposed them."""
    mine = Q(proposed_by=principal.name)
    if principal.user is not None:
        mine |= Q(proposer_user=principal.user)
    head_visible = MemoryVersion.objects.filter(
        VisibleTo(principal), item_id=OuterRef("item_id"), number=OuterRef("item__head_version")
    )
    versions = MemoryVersion.objects.filter(
        mine, VisibleTo(principal), Exists(head_visible), tenant=principal.tenant
    )
    if status:
        versions = versions.filter(status=status)
    if after is not None:
        versions = versions.filter(pk__gt=after)
    # Each reason names its open questions (approvals.wording): read them for the page at once.
    questions = Prefetch(
        "clarifications",
        queryset=Clarification.objects.filter(answered_at__isnull=True).order_by("member"),
        to_attr="open_clarifications",
    )
    return list(versions_with_details(versions).prefetch_related(questions).order_by("pk")[:limit])


def proposal_representation(version: MemoryVersion, reasons: list[str]) -> dict[str, Any]:
    """``reasons`` are in words, for the reader (``approvals.wording.proposal_reasons``)."""
    return {
        "memory_id": version.item_id,
        "version": version.number,
        "kind": version.kind,
        "subject": version.subject_id,
        "subject_mention": version.item.subject_mention or None,
        "field": version.field,
        "statement": one_line(version.statement),
        "status": version.status,
        "in_use": version.status == Status.ACTIVE,
        "reasons": reasons,
        "recorded_at": iso(version.recorded_at),
        "status_changed_at": iso(version.status_changed_at),
    }


def entity_kinds(principal: Principal) -> list[dict[str, Any]]:
    rows = (
        Entity.objects.filter(tenant=principal.tenant, erased_at__isnull=True)
        .values("kind")
        .annotate(entities=Count("id"))
        .order_by("-entities", "kind")
    )
    return [{"kind": row["kind"], "entities": row["entities"]} for row in rows]


def entities_by_external_ref(
    principal: Principal, external_ref: str, kind: str | None
) -> list[Entity]:
    """Entities carrying exactly this external ref (case as given: another system's id);
    never an erased one (issue 42)."""
    if not external_ref:
        return []
    entities = Entity.objects.filter(
        tenant=principal.tenant, external_ref=external_ref, erased_at__isnull=True
    )
    if kind:
        entities = entities.filter(kind=kind)
    return list(entities.prefetch_related("aliases").order_by("pk")[:MAX_MATCHES])
