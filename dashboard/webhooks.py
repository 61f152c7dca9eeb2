"""The tenant's webhook endpoints and their delivery log, for people with manage_webhooks
(endpoints are created through the API, where the secret is shown once); a disabled one
is re-enabled here too (``webhook_enable``, as the API does)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.principals import Principal
from dashboard.access import dashboard_view, page_context
from webhooks.delivery import retry_window
from webhooks.models import WebhookDelivery
from webhooks.services import access_webhook, held_retention, webhook_enable, webhooks_of

DELIVERIES_SHOWN = 20


@require_GET
@dashboard_view
def webhooks_page(request: HttpRequest, principal: Principal) -> HttpResponse:
    endpoints = list(webhooks_of(principal).order_by("created_at", "pk"))
    for endpoint in endpoints:
        endpoint.recent = list(  # type: ignore[attr-defined]
            WebhookDelivery.objects.filter(endpoint=endpoint)
            .order_by("-created_at", "-pk")
            .prefetch_related(Prefetch("attempt_log"))[:DELIVERIES_SHOWN]
        )
    held_days = held_retention().days
    return render(
        request,
        "dashboard/webhooks.html",
        page_context(
            principal,
            endpoints=endpoints,
            held_days=held_days,
            retry_window=_in_words(retry_window()),
        ),
    )


def _in_words(window: timedelta) -> str:
    """The retry window as configured (MEMGOV_WEBHOOK_RETRY_WINDOW_SECONDS), in the largest
    unit that divides it: "24 hours", "90 minutes", "3 days"."""
    seconds = int(window.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0 and not (unit == "day" and seconds < 2 * size):
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


@require_POST
@dashboard_view
def webhook_enable_view(
    request: HttpRequest, principal: Principal, webhook_id: str
) -> HttpResponse:
    enabled = webhook_enable(principal=principal, endpoint=access_webhook(principal, webhook_id))
    dropped = (
        f"; {enabled.dropped} held longer than the retention were dropped"
        if enabled.dropped
        else ""
    )
    messages.success(
        request,
        f"{webhook_id} re-enabled: {enabled.released} held events are being sent, "
        f"oldest first{dropped}.",
    )
    return redirect("dashboard:webhooks")
