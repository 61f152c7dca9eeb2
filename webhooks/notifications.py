"""The owner of an endpoint that was given up on learns it by email, once per disabling."""

from __future__ import annotations

from approvals.notifications import tell_once
from webhooks.models import WebhookEndpoint
from webhooks.services import held_retention


def notify_disabled(webhook_id: str) -> bool:
    endpoint = WebhookEndpoint.objects.select_related("created_by").get(pk=webhook_id)
    owner = endpoint.created_by
    if not owner.email or not owner.is_active or endpoint.disabled_at is None:
        return False  # nobody to tell, or re-enabled before the email went
    context = {"endpoint": endpoint, "held_days": held_retention().days}
    # Once per disabling: an endpoint re-enabled and disabled again is told again.
    event = f"webhook_disabled:{endpoint.pk}:{endpoint.disabled_at.isoformat()}"
    return tell_once(event, owner, endpoint.tenant_id, "webhook_disabled", context)
