"""What a task was told, and whether it must re-verify before a consequential action."""

from __future__ import annotations

from typing import Any

from audit.models import RetrievalUse
from memory.models import MemoryVersion, TaskFlag
from memory.principals import Principal
from memory.serializers import iso


def task_record(principal: Principal, task_id: str) -> dict[str, Any] | None:
    uses = list(
        RetrievalUse.objects.filter(tenant=principal.tenant, task_id=task_id)
        .select_related("retrieval")
        .order_by("retrieval__retrieved_at", "pk")
    )
    if not uses:
        return None
    statuses = dict(
        ((v.item_id, v.number), v.status)
        for v in MemoryVersion.objects.filter(item_id__in={u.item_id for u in uses}).only(
            "item_id", "number", "status"
        )
    )
    flags = TaskFlag.objects.filter(tenant=principal.tenant, task_id=task_id).order_by("at", "pk")
    return {
        "task_id": task_id,
        "used": [
            {
                "memory_id": u.item_id,
                "version": u.version_number,
                "field": u.field,
                "retrieved_at": iso(u.retrieval.retrieved_at),
                "retrieval_id": u.retrieval_id,
                "status_now": statuses.get((u.item_id, u.version_number)),
            }
            for u in uses
        ],
        "needs_reverification": flags.exists(),
        "reasons": [
            {
                "memory_id": f.item_id,
                "version": f.version_number,
                "event": f.event,
                "at": iso(f.at),
                "reason": f.reason,
            }
            for f in flags
        ],
    }
