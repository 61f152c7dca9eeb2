"""Managing a tenant's webhook endpoints (docs/api.md, Webhooks): people holding
``manage_webhooks`` create, list, delete them and rotate their secrets; every change is
audited (the URL only as a digest and its host: a URL may carry a token)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from audit.chain import digest
from audit.services import audit_append
from core.authority import MANAGE_WEBHOOKS, require_tenant_permission
from core.errors import Conflict, InvalidContent, NotFound
from core.kinds import OutboxKind
from core.outbox import BROKER_DOWN, outbox_write
from core.principals import Principal
from memory.events import EVENT_TYPES
from webhooks import signing
from webhooks.addresses import MAX_URL_CHARS, url_problem
from webhooks.models import WebhookDelivery, WebhookEndpoint

logger = logging.getLogger(__name__)
# Thin tasks over webhooks.delivery, by name: that module imports this one.
DELIVER_TASK = "webhooks.tasks.deliver"
TURNS_TASK = "webhooks.tasks.request_tenant_turns"

REFUSAL = "Managing webhooks needs the manage_webhooks permission on the tenant."
ROTATION_GRACE = timedelta(hours=24)


def require_manage_webhooks(principal: Principal) -> None:
    require_tenant_permission(principal, MANAGE_WEBHOOKS, REFUSAL)


def access_webhook(principal: Principal, webhook_id: str) -> WebhookEndpoint:
    """The caller's tenant's endpoint (404 for another tenant's or a deleted one)."""
    require_manage_webhooks(principal)
    endpoint = (
        WebhookEndpoint.objects.filter(
            tenant=principal.tenant, pk=webhook_id, deleted_at__isnull=True
        )
        .select_related("created_by")
        .first()
    )
    if endpoint is None:
        raise NotFound(f"No webhook {webhook_id}.")
    return endpoint


def webhooks_of(principal: Principal) -> QuerySet[WebhookEndpoint]:
    require_manage_webhooks(principal)
    return WebhookEndpoint.objects.filter(
        tenant=principal.tenant, deleted_at__isnull=True
    ).select_related("created_by")


def _valid_events(events: Sequence[str]) -> list[str]:
    unknown = sorted(set(events) - set(EVENT_TYPES))
    if unknown:
        raise InvalidContent({"events": [f"unknown event types: {', '.join(unknown)}"]})
    if not events:
        raise InvalidContent({"events": ["name at least one event type"]})
    return sorted(set(events), key=EVENT_TYPES.index)


def _audit(principal: Principal, endpoint: WebhookEndpoint, action: str, **data: object) -> None:
    audit_append(
        tenant=endpoint.tenant,
        actor=principal.name,
        action=action,
        target_type="webhook",
        target_id=endpoint.pk,
        data=data,
    )


def webhook_create(
    *, principal: Principal, url: str, events: Sequence[str], description: str = ""
) -> WebhookEndpoint:
    """A new endpoint with a new secret (returned once, by the caller's answer)."""
    require_manage_webhooks(principal)
    assert principal.user is not None  # noqa: S101 - require_manage_webhooks: a person
    problem = url_problem(url) if len(url) <= MAX_URL_CHARS else "is too long"
    if problem is not None:
        raise InvalidContent({"url": [problem]})
    chosen = _valid_events(events)
    with transaction.atomic(durable=True):
        endpoint = WebhookEndpoint.objects.create(
            tenant=principal.tenant,
            url=url,
            description=description,
            events=chosen,
            secret=signing.secret_new(),
            created_by=principal.user,
            created_at=timezone.now(),
        )
        _audit(
            principal,
            endpoint,
            "webhook.created",
            host=urlsplit(url).hostname,
            url_sha256=digest(url),
            events=chosen,
        )
    return endpoint


def webhook_delete(*, principal: Principal, endpoint: WebhookEndpoint) -> None:
    """Stop sending: the endpoint disappears from the API and its waiting deliveries end."""
    require_manage_webhooks(principal)
    with transaction.atomic(durable=True):
        now = timezone.now()
        gone = WebhookEndpoint.objects.filter(pk=endpoint.pk, deleted_at__isnull=True).update(
            deleted_at=now
        )
        if not gone:
            raise NotFound(f"No webhook {endpoint.pk}.")
        _end_pending(endpoint, "endpoint deleted")
        _audit(principal, endpoint, "webhook.deleted")


def webhook_rotate_secret(
    *, principal: Principal, endpoint: WebhookEndpoint, grace: timedelta = ROTATION_GRACE
) -> WebhookEndpoint:
    """A new secret; the previous one keeps signing (beside it) for ``grace``, so the
    receiver can switch without losing a delivery. ``grace=0`` drops it at once."""
    require_manage_webhooks(principal)
    with transaction.atomic(durable=True):
        locked = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        now = timezone.now()
        locked.previous_secret = locked.secret if grace > timedelta(0) else ""
        locked.previous_secret_until = now + grace if grace > timedelta(0) else None
        locked.secret = signing.secret_new()
        locked.save(update_fields=["secret", "previous_secret", "previous_secret_until"])
        _audit(
            principal,
            locked,
            "webhook.secret_rotated",
            previous_valid_for=int(grace.total_seconds()),
        )
    locked.created_by = endpoint.created_by
    return locked


def _end_pending(endpoint: WebhookEndpoint, why: str) -> None:
    WebhookDelivery.objects.filter(
        endpoint_id=endpoint.pk,
        status__in=[WebhookDelivery.Status.PENDING, WebhookDelivery.Status.HELD],
    ).update(status=WebhookDelivery.Status.FAILED, next_attempt_at=None, last_error=why)


def held_retention() -> timedelta:
    return timedelta(seconds=settings.MEMGOV_WEBHOOK_HELD_RETENTION_SECONDS)


def webhook_disable(*, endpoint_id: str, reason: str, failed_delivery_id: str = "") -> bool:
    """Inside the caller's transaction: give up on an endpoint that failed for the whole
    retry window; its owner is emailed after commit. False when already disabled. Its
    undelivered events (the waiting ones and ``failed_delivery_id``, the one that gave
    up) are held, like those recorded while it stays disabled, for ``webhook_enable``."""
    changed = WebhookEndpoint.objects.filter(
        pk=endpoint_id, status=WebhookEndpoint.Status.ACTIVE
    ).update(
        status=WebhookEndpoint.Status.DISABLED,
        disabled_at=timezone.now(),
        disabled_reason=reason[:500],
    )
    if not changed:
        return False
    endpoint = WebhookEndpoint.objects.select_related("tenant").get(pk=endpoint_id)
    WebhookDelivery.objects.filter(endpoint_id=endpoint.pk).filter(
        Q(status=WebhookDelivery.Status.PENDING) | Q(pk=failed_delivery_id)
    ).update(status=WebhookDelivery.Status.HELD, next_attempt_at=None, claimed_until=None)
    audit_append(
        tenant=endpoint.tenant,
        actor="system:webhooks",
        action="webhook.disabled",
        target_type="webhook",
        target_id=endpoint.pk,
        data={"reason": reason[:500]},
    )
    outbox_write(
        kind=OutboxKind.WEBHOOK_DISABLED,
        payload={"webhook_id": endpoint.pk},
        tenant=endpoint.tenant,
    )
    return True


@dataclass(frozen=True)
class Enabled:
    endpoint: WebhookEndpoint
    released: int  # held events sent again, oldest first
    dropped: int  # held longer than the retention: never sent


def webhook_enable(*, principal: Principal, endpoint: WebhookEndpoint) -> Enabled:
    """Deliver to a disabled endpoint again, once its receiver answers (issue 47, point 3).
    The events held since it was disabled go out first, in the order they were recorded
    and with their own ids (``webhook-id``), each with a fresh retry window; those held
    longer than ``MEMGOV_WEBHOOK_HELD_RETENTION_SECONDS`` are dropped and counted."""
    require_manage_webhooks(principal)
    with transaction.atomic(durable=True):
        locked = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        if locked.deleted_at is not None:
            raise NotFound(f"No webhook {endpoint.pk}.")
        if locked.status != WebhookEndpoint.Status.DISABLED:
            raise Conflict(
                f"Only a disabled webhook can be enabled; {locked.pk} is {locked.status}.",
                webhook_status=locked.status,
            )
        now = timezone.now()
        retention = held_retention()
        held = WebhookDelivery.objects.filter(
            endpoint_id=locked.pk, status=WebhookDelivery.Status.HELD
        )
        dropped = held.filter(created_at__lt=now - retention).update(
            status=WebhookDelivery.Status.FAILED,
            last_error=f"held longer than {retention} while the endpoint was disabled",
        )
        # Due since they were recorded: the tenant's turns (webhooks/delivery.py) take the
        # oldest due first, so they go out in their order, ahead of newer events.
        released = held.update(
            status=WebhookDelivery.Status.PENDING,
            next_attempt_at=F("created_at"),
            claimed_until=None,
            released_at=now,
            attempts_before_release=F("attempts"),
        )
        locked.status = WebhookEndpoint.Status.ACTIVE
        locked.disabled_at = None
        locked.disabled_reason = ""
        locked.save(update_fields=["status", "disabled_at", "disabled_reason"])
        _audit(principal, locked, "webhook.enabled", released=released, dropped=dropped)
        if released:
            tenant_id = locked.tenant_id
            transaction.on_commit(lambda: _request_turns(tenant_id))
    locked.created_by = endpoint.created_by
    return Enabled(locked, released, dropped)


def _request_turns(tenant_id: int) -> None:
    """Ask for the tenant's turns (its free slots, oldest released event first); each
    attempt that ends hands the next turn on (webhooks.delivery), and with the broker
    down, beat's ``deliver_due`` sweeper asks instead."""
    try:
        current_app.tasks[TURNS_TASK].apply_async(args=(tenant_id,))
    except BROKER_DOWN:
        logger.exception("webhook turns of tenant %s not asked for; the sweeper will", tenant_id)
