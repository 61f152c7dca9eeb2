"""Webhook deliveries after an erasure (issue 33, point 11): a delivery's body is the event
as sent, and an event's reason is free text (a retirement's, a rejection's) that may name
the person. ``memory.erasure`` runs ``redact_deliveries`` as one of its phases, batch by
batch in its own transactions: every delivery of the tenant naming the erased subject, one
of its items or a source cited for it keeps its ids and statuses but loses its reason,
sent or still waiting, so a retry after the erasure sends the redacted body (signed anew
at each attempt). An event that waited in the broker through the whole erasure is
redacted when it is fanned out (``event_data_for_fan_out``).

A POST already in flight when its delivery is redacted still carries the body it read:
at most one attempt, bounded by the attempt's timeout."""

from __future__ import annotations

import json
from typing import Any

from memory.erasure_phases import batch_size, events_batch_redact, events_redacted
from memory.models import Erasure
from webhooks.delivery import body_of
from webhooks.models import WebhookDelivery

PHASE = "webhook_deliveries"
COUNTS = ("webhook_deliveries",)


def redact_deliveries(erasure: Erasure) -> bool:
    """One batch of the tenant's deliveries, in id order after ``erasure.cursor``."""
    rows = list(
        WebhookDelivery.objects.filter(tenant_id=erasure.tenant_id, pk__gt=erasure.cursor)
        .filter(body__contains='"reason":"')  # the only free text an event carries
        .exclude(body__contains='"reason":""')
        .order_by("pk")
        .values_list("pk", "body")[: batch_size()]
    )
    return events_batch_redact(
        erasure, [(pk, _event(body)) for pk, body in rows], _save, "webhook_deliveries"
    )


def _save(delivery_id: str, event: dict[str, Any]) -> int:
    body = body_of(str(event.get("type")), str(event.get("timestamp")), event["data"])
    return WebhookDelivery.objects.filter(pk=delivery_id).update(body=body)


def event_data_for_fan_out(tenant_id: int, data: dict[str, Any]) -> dict[str, Any]:
    """The event's data as it may be sent now: without its reason if it names what an
    erasure has erased since the event was written."""
    [redacted] = events_redacted(tenant_id, [data])
    return data if redacted is None else redacted


def _event(body: str) -> dict[str, Any]:
    try:
        event = json.loads(body)
    except ValueError:
        return {}
    return event if isinstance(event, dict) else {}
