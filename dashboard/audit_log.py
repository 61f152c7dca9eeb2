"""The audit trail for people with ``view_audit``: filters, and a chain verification."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from audit.selectors import ChainVerification, audit_events, audit_verify, require_view_audit
from core.principals import Principal
from dashboard.access import dashboard_view, page_context
from dashboard.forms import AuditFilterForm

PAGE_SIZE = 100


def _render(
    request: HttpRequest, principal: Principal, verdict: ChainVerification | None = None
) -> HttpResponse:
    form = AuditFilterForm(request.GET or None)
    # Read in the tenant's zone (the dashboard activates it), as the table shows times.
    form.fields["since"].label = f"Since ({principal.tenant.time_zone})"
    data = form.cleaned_data if form.is_bound and form.is_valid() else {}
    events = audit_events(
        tenant=principal.tenant,
        target=data.get("target") or None,
        actor=data.get("actor") or None,
        action=data.get("action") or None,
        since=data.get("since"),
    ).order_by("-seq")
    page = Paginator(events, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "dashboard/audit.html",
        page_context(principal, form=form, page=page, query=query.urlencode(), verdict=verdict),
        status=422 if form.is_bound and not form.is_valid() else 200,
    )


@require_GET
@dashboard_view
def audit_page(request: HttpRequest, principal: Principal) -> HttpResponse:
    require_view_audit(principal)
    return _render(request, principal)


@require_POST
@dashboard_view
def audit_verify_view(request: HttpRequest, principal: Principal) -> HttpResponse:
    """Walk the chain now; htmx swaps the verdict in, a plain form post gets the page."""
    require_view_audit(principal)
    verdict = audit_verify(tenant=principal.tenant)
    if request.headers.get("HX-Request") != "true":
        return _render(request, principal, verdict)
    return render(request, "dashboard/_audit_verify.html", page_context(principal, verdict=verdict))
