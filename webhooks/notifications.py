"""The owner of an endpoint that was given up on learns it by email, once."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from approvals import emails
from approvals.models import Notification
from webhooks.models import WebhookEndpoint


def notify_disabled(webhook_id: str) -> bool:
    endpoint = WebhookEndpoint.objects.select_related("created_by").get(pk=webhook_id)
    owner = endpoint.created_by
    if not owner.email or not owner.is_active:
        return False
    try:
        with transaction.atomic():
            claim = Notification.objects.create(
                event=f"webhook_disabled:{endpoint.pk}",
                recipient=owner,
                tenant_id=endpoint.tenant_id,
                claimed_at=timezone.now(),
            )
    except IntegrityError:
        return False  # told already (a redelivered task)
    try:
        emails.send_to("webhook_disabled", owner, {"endpoint": endpoint})
    except Exception:
        claim.delete()
        raise
    Notification.objects.filter(pk=claim.pk).update(sent_at=timezone.now())
    return True
