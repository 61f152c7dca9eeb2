"""Events for the tenant's webhook endpoints (docs/design.md, Webhooks and agent interfaces).

A service announces an event with one call, ``event_emit``, inside its own transaction: the
event becomes an outbox row (core.outbox), so it is sent only if the change commits, and
still sent when the broker was down at commit. The webhooks app registers the task that
fans the row out to the endpoints subscribed to its type; nothing here imports it.

Payloads carry ids, statuses and reasons — never a value, a statement or source content."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.utils import timezone

from core.ids import new_event_id
from core.kinds import OutboxKind
from core.models import Tenant
from core.outbox import outbox_write
from core.times import iso
from memory.models import MemoryVersion

MEMORY_PENDING_REVIEW = "memory.pending_review"
MEMORY_ACTIVATED = "memory.activated"
MEMORY_CHECKS_FAILED = "memory.checks_failed"
MEMORY_REJECTED = "memory.rejected"
MEMORY_RETIRED = "memory.retired"
MEMORY_EXPIRED = "memory.expired"
SOURCE_REVOKED = "source.revoked"
TASK_NEEDS_REVERIFICATION = "task.needs_reverification"
REVALIDATION_FINISHED = "revalidation.finished"
SUBJECT_ERASED = "subject.erased"
EVENT_TYPES = (
    MEMORY_PENDING_REVIEW,
    MEMORY_ACTIVATED,
    MEMORY_CHECKS_FAILED,
    MEMORY_REJECTED,
    MEMORY_RETIRED,
    MEMORY_EXPIRED,
    SOURCE_REVOKED,
    TASK_NEEDS_REVERIFICATION,
    REVALIDATION_FINISHED,
    SUBJECT_ERASED,
)
# The outbox kind whose task delivers events (registered by webhooks/apps.py).
REASON_CHARS = 500


def event_emit(*, tenant: Tenant, event_type: str, data: Mapping[str, Any]) -> str:
    """Announce ``event_type`` to the tenant's endpoints after the caller's transaction
    commits; returns the event id (``webhook-id`` of every delivery of it)."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    event_id = new_event_id()
    payload = {
        "event_id": event_id,
        "tenant_id": tenant.pk,
        "event_type": event_type,
        "timestamp": iso(timezone.now()),
        "data": dict(data),
    }
    outbox_write(kind=OutboxKind.WEBHOOK_EVENT, payload=payload, tenant=tenant)
    return event_id


def reason_text(reason: str) -> str:
    return reason[:REASON_CHARS]


def version_data(version: MemoryVersion, *, previous: str | None, reason: str) -> dict[str, Any]:
    """What an event says about one version: ids, names, statuses, the reason."""
    return {
        "memory_id": version.item_id,
        "version": version.number,
        "kind": version.kind,
        "subject": version.subject_id,
        "field": version.field,
        "status": str(version.status),
        "previous_status": previous,
        "reason": reason_text(reason),
    }


def versions_data(versions: Iterable[MemoryVersion], *, reason: str) -> dict[str, Any]:
    """One event for a lineage whose versions ended together (a retirement, an expiry)."""
    versions = list(versions)
    head = versions[-1]
    return {
        "memory_id": head.item_id,
        "versions": [v.number for v in versions],
        "kind": head.kind,
        "subject": head.subject_id,
        "field": head.field,
        "status": str(head.status),
        "reason": reason_text(reason),
    }
