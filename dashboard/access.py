"""Who is looking, what they may open, and how domain errors become pages.

The dashboard acts as the logged-in person (``principal_for_user``) through the same
``access_*`` selectors as the API, and narrows further: a person opens an item only when
``core.authority`` says they oversee its scope, own it or proposed it. Anything else —
another tenant's item, an invisible one, one outside their authority — is a 404, so the
dashboard never confirms that an item exists to someone who may not act on it."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, Concatenate, ParamSpec, cast
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django_htmx.http import HttpResponseClientRedirect

from core.authority import (
    MANAGE_WEBHOOKS,
    REVIEW_PERMISSION,
    Authority,
    has_tenant_permission,
)
from core.errors import DomainError, NotFound
from core.models import Tenant
from core.principals import Principal, principal_for_user
from memory.models import MemoryItem, MemoryVersion
from memory.selectors import access_memory, memory_head

P = ParamSpec("P")
PageView = Callable[Concatenate[HttpRequest, Principal, P], HttpResponse]


def dashboard_memory(
    principal: Principal, oversight: Authority, memory_id: str
) -> tuple[MemoryItem, MemoryVersion]:
    """``access_memory`` plus the dashboard's own narrowing; the head comes with details."""
    item = access_memory(principal, memory_id)
    head = memory_head(item)
    if not oversight.sees(head):
        raise NotFound(f"No memory {memory_id}.")
    return item, head


def logged_in_user(request: HttpRequest) -> User:
    """``login_required`` ran: the user is a real one, not the anonymous stand-in."""
    return cast(User, request.user)


def error_page(request: HttpRequest, exc: DomainError) -> HttpResponse:
    """A domain error as a calm page with the status the API would give."""
    titles = {403: "Not allowed", 404: "Not found", 409: "Conflict", 422: "Check the input"}
    return render(
        request,
        "dashboard/error.html",
        {"title": titles.get(exc.status, "Cannot do that"), "detail": exc.detail},
        status=exc.status,
    )


def no_tenant_page(request: HttpRequest, user: User) -> HttpResponse:
    """Someone who belongs to no tenant: a superuser picks a tenant to look at in the
    admin (the dashboard acts as a member, which a superuser is not); anyone else is told
    whom to ask — never a link back to this same page."""
    tenants = list(Tenant.objects.order_by("name")) if user.is_superuser else []
    return render(request, "dashboard/no_tenant.html", {"tenants": tenants}, status=403)


def dashboard_view(view: PageView[P]) -> Callable[..., HttpResponse]:
    """Login, a tenant principal, and domain errors turned into pages (never a 500)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        if not request.user.is_authenticated and request.headers.get("HX-Request") == "true":
            # A polled fragment after the session ended: send the whole page to the login,
            # rather than let htmx swap the login form into a table cell.
            page = urlsplit(request.headers.get("HX-Current-URL", "/"))
            back = page.path + (f"?{page.query}" if page.query else "")
            return HttpResponseClientRedirect(f"{settings.LOGIN_URL}?{urlencode({'next': back})}")
        return signed_in(request, *args, **kwargs)

    @login_required
    def signed_in(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        principal = principal_for_user(logged_in_user(request))
        if principal is None:
            return no_tenant_page(request, logged_in_user(request))
        # Every time on the page (and every time typed into a form) is in the tenant's zone.
        timezone.activate(principal.tenant.zone)
        try:
            return view(request, principal, *args, **kwargs)
        except DomainError as exc:
            return error_page(request, exc)
        finally:
            timezone.deactivate()

    return wrapper


def reviews_anything(authority: Authority) -> bool:
    """Whether this person could ever be asked to decide: a review grant of any kind, on
    the tenant or on a scope value. Someone without one starts on "Your memories"."""
    codes = set(REVIEW_PERMISSION.values())
    return bool(codes & authority.on_tenant) or any(c in codes for c, _, _ in authority.on_values)


def navigation(request: HttpRequest) -> dict[str, Any]:
    """Context processor: the header of every page, error pages included — the tenant's
    name, and only the links this person can use (``core.authority``)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    principal = principal_for_user(cast(User, user))
    if principal is None:
        return {"nav": {"superuser_without_tenant": user.is_superuser}}
    allowed = Authority.load(principal)
    return {
        "tenant": principal.tenant,
        "nav": {
            "audit": allowed.has("view_audit"),
            "admin": user.is_staff,
            "queue": reviews_anything(allowed),  # nobody else is ever asked to decide
        },
    }


def page_context(principal: Principal, **extra: Any) -> dict[str, Any]:
    """What every page's layout needs; the webhooks link is shown only to those who may
    open the page (asked lazily: the template calls it when it draws the menu)."""
    return {
        "principal": principal,
        "tenant": principal.tenant,
        "nav_webhooks": lambda: has_tenant_permission(principal, MANAGE_WEBHOOKS),
        **extra,
    }
