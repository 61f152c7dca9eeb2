"""The tenant's webhook endpoints and their delivery log, for people with manage_webhooks
(endpoints are created through the API, where the secret is shown once)."""

from __future__ import annotations

from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from core.principals import Principal
from dashboard.access import dashboard_view, page_context
from webhooks.models import WebhookDelivery
from webhooks.services import webhooks_of

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
    return render(request, "dashboard/webhooks.html", page_context(principal, endpoints=endpoints))
