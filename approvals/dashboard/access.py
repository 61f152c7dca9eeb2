"""Who is looking, what they may open, and how domain errors become pages.

The dashboard acts as the logged-in person (``principal_for_user``) through the same
``access_*`` selectors as the API, and narrows further: a person opens an item only when
they hold some Memgov permission over its scope, own it or proposed it. Anything else —
another tenant's item, an invisible one, one outside their authority — is a 404, so the
dashboard never confirms that an item exists to someone who may not act on it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import wraps
from typing import Any, Concatenate, ParamSpec, cast
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_htmx.http import HttpResponseClientRedirect

from approvals.models import (
    ScopeValueGroupObjectPermission,
    ScopeValueUserObjectPermission,
    TenantGroupObjectPermission,
    TenantUserObjectPermission,
)
from memory.errors import DomainError, NotFound
from memory.models import MemoryItem, MemoryVersion
from memory.principals import Principal, principal_for_user
from memory.selectors import access_memory, memory_head, version_visible

P = ParamSpec("P")
PageView = Callable[Concatenate[HttpRequest, Principal, P], HttpResponse]


@dataclass(frozen=True)
class Oversight:
    """The permissions a person holds in their tenant, loaded once per request, so lists
    (queue, browser, overview) can filter many rows without a query per row."""

    principal: Principal
    tenant_permissions: frozenset[str]
    scoped_values: frozenset[tuple[str, str]]

    @classmethod
    def load(cls, principal: Principal) -> Oversight:
        user = principal.user
        if user is None or not user.is_active:
            return cls(principal, frozenset(), frozenset())
        on_tenant = {
            *TenantUserObjectPermission.objects.filter(
                user=user, content_object=principal.tenant
            ).values_list("permission__codename", flat=True),
            *TenantGroupObjectPermission.objects.filter(
                group__user=user, content_object=principal.tenant
            ).values_list("permission__codename", flat=True),
        }
        columns = ("content_object__dimension", "content_object__value")
        on_values = {
            *ScopeValueUserObjectPermission.objects.filter(
                user=user, content_object__tenant=principal.tenant
            ).values_list(*columns),
            *ScopeValueGroupObjectPermission.objects.filter(
                group__user=user, content_object__tenant=principal.tenant
            ).values_list(*columns),
        }
        return cls(principal, frozenset(on_tenant), frozenset(on_values))

    def has(self, codename: str) -> bool:
        return codename in self.tenant_permissions

    def over_scope(self, scope: Mapping[str, str]) -> bool:
        return bool(self.tenant_permissions) or any(
            (dim, value) in self.scoped_values for dim, value in scope.items()
        )

    def sees(self, version: MemoryVersion) -> bool:
        """Visible to the person and within their authority, ownership or proposal."""
        if not version_visible(version, self.principal):
            return False
        user = self.principal.user
        assert user is not None  # noqa: S101 - dashboard principals are people
        mine = user.pk in (version.owner_id, version.proposer_user_id)
        return mine or self.over_scope(version.scope)


def dashboard_memory(
    principal: Principal, oversight: Oversight, memory_id: str
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
            return render(
                request,
                "dashboard/error.html",
                {
                    "title": "No tenant",
                    "detail": "Your account is not a member of any tenant, so there is "
                    "nothing to review. Ask an operator to run create_user for you.",
                },
                status=403,
            )
        try:
            return view(request, principal, *args, **kwargs)
        except DomainError as exc:
            return error_page(request, exc)

    return wrapper


def page_context(principal: Principal, **extra: Any) -> dict[str, Any]:
    return {"principal": principal, "tenant": principal.tenant, **extra}
