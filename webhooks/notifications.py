"""The owner of an endpoint that was given up on learns it by email, once."""

from __future__ import annotations

from approvals.notifications import tell_once
from webhooks.models import WebhookEndpoint


def notify_disabled(webhook_id: str) -> bool:
    endpoint = WebhookEndpoint.objects.select_related("created_by").get(pk=webhook_id)
    owner = endpoint.created_by
    if not owner.email or not owner.is_active:
        return False
    context = {"endpoint": endpoint}
    return tell_once(
        f"webhook_disabled:{endpoint.pk}", owner, endpoint.tenant_id, "webhook_disabled", context
    )
