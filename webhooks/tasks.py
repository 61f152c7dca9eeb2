"""Celery tasks of the webhooks: thin, idempotent wrappers around ``webhooks.delivery``."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from webhooks import delivery, erasure, notifications


@shared_task(acks_late=True)
def fan_out_event(
    event_id: str, tenant_id: int, event_type: str, timestamp: str, data: dict[str, Any]
) -> list[str]:
    """The outbox hands each event here (kind ``webhook.event``); an erasure since it was
    written withholds its reason."""
    return delivery.event_fan_out(
        event_id=event_id,
        tenant_id=tenant_id,
        event_type=event_type,
        timestamp=timestamp,
        data=erasure.event_data_for_fan_out(tenant_id, data),
    )


@shared_task(acks_late=True)
def deliver(delivery_id: str) -> str:
    return delivery.delivery_attempt(delivery_id)


@shared_task
def request_tenant_turns(tenant_id: int) -> list[str]:
    """A re-enabled endpoint's released events: the tenant's free slots are asked for."""
    return delivery.tenant_attempts_requested(tenant_id)


@shared_task
def deliver_due() -> list[str]:
    """Beat: retries whose countdown was too long for the broker, or was lost."""
    return delivery.deliveries_due()


@shared_task(acks_late=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def notify_webhook_disabled(webhook_id: str) -> bool:
    return notifications.notify_disabled(webhook_id)
