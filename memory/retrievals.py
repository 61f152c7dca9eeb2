"""Reads of the retrieval log (selectors): what a task was told, and whether it must
re-verify before a consequential action."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch

from core.principals import Principal
from core.times import iso
from memory.models import MemoryVersion, RetrievalRecord, RetrievalUse, TaskFlag
from memory.visibility import VisibleTo


def task_record(principal: Principal, task_id: str) -> dict[str, Any] | None:
    """None when the task never resolved, or when every fact it was told is hidden from
    this caller (a 404, so a hidden task's existence is not told either); a resolve that
    was told nothing (only abstentions) is still a recorded retrieval, with nothing in
    ``used``."""
    records = list(
        RetrievalRecord.objects.filter(tenant=principal.tenant, task_id=task_id)
        .order_by("retrieved_at", "pk")
        .prefetch_related(Prefetch("uses", queryset=RetrievalUse.objects.order_by("pk")))
    )
    if not records:
        return None
    uses = [(record, use) for record in records for use in record.uses.all()]
    versions = {
        (v.item_id, v.number): v
        for v in MemoryVersion.objects.filter(
            VisibleTo(principal), tenant=principal.tenant, item_id__in={u.item_id for _, u in uses}
        ).only("item_id", "number", "status")
    }
    flags = list(
        TaskFlag.objects.filter(tenant=principal.tenant, task_id=task_id).order_by("at", "pk")
    )

    def visible(item_id: str, number: int) -> bool:
        # Another principal may ask about the same task: what it may not see is left out,
        # as resolve leaves it out (a flag still counts for needs_reverification).
        return (item_id, number) in versions

    told_nothing = any(not record.uses.all() for record in records)
    if uses and not told_nothing and not any(visible(u.item_id, u.version_number) for _, u in uses):
        return None  # every fact it used is hidden from this caller: as if it never ran
    uses = [(r, u) for r, u in uses if visible(u.item_id, u.version_number)]
    return {
        "task_id": task_id,
        "used": [
            {
                "memory_id": u.item_id,
                "version": u.version_number,
                "field": u.field,
                "retrieved_at": iso(record.retrieved_at),
                "retrieval_id": record.pk,
                "status_now": versions[(u.item_id, u.version_number)].status,
            }
            for record, u in uses
        ],
        "needs_reverification": bool(flags),
        "reasons": [
            {
                "memory_id": f.item_id,
                "version": f.version_number,
                "event": f.event,
                "at": iso(f.at),
                "reason": f.reason,
            }
            for f in flags
            if visible(f.item_id, f.version_number)
        ],
    }
