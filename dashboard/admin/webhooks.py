"""Django admin for webhook endpoints: look at them, and re-enable a disabled one through
the same service as the API and the dashboard (``webhook_enable``: audited, held events
sent). The signing secrets are never shown."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.principals import Principal
from dashboard.admin.approvals import ReadOnlyAdmin, run_service
from webhooks.models import WebhookEndpoint
from webhooks.services import access_webhook, webhook_enable


def _enable(principal: Principal, endpoint: WebhookEndpoint) -> str:
    enabled = webhook_enable(principal=principal, endpoint=access_webhook(principal, endpoint.pk))
    return (
        f"re-enabled; {enabled.released} held events are being sent, "
        f"{enabled.dropped} older than the retention dropped"
    )


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyAdmin):
    list_display = ("id", "tenant", "url", "status", "disabled_at")
    list_filter = ("status", "tenant")
    exclude = ("secret", "previous_secret")
    actions = ("enable_selected",)

    @admin.action(description="Re-enable selected disabled endpoints (as you)")
    def enable_selected(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        run_service(self, request, queryset, _enable)
