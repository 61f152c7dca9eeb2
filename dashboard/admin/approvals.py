"""Django admin for the review models, and the helpers every Memgov admin shares.

Governed data is read-only here: versions, sources, approvals, check results and audit
events change only through services. Status changes are admin actions that call those
services as the logged-in admin user, so authority, audit and notifications are exactly
those of the dashboard; a refusal shows as an admin error message, never a 500."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from django import forms
from django.contrib import admin, messages
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from approvals.models import (
    Approval,
    CheckResult,
    Notification,
    RevalidatedVersion,
    Revalidation,
    ScenarioRemoval,
)
from core.authority import administered_tenant
from core.errors import DomainError
from core.models import (
    Outbox,
    ScopeValueGroupObjectPermission,
    ScopeValueUserObjectPermission,
    Tenant,
    TenantGroupObjectPermission,
    TenantUserObjectPermission,
)
from core.principals import Principal, principal_for_user
from memory.models import Embedding

M = TypeVar("M", bound=Model)

if TYPE_CHECKING:
    ModelAdminBase = admin.ModelAdmin[Any]
    TabularInlineBase = admin.TabularInline[Any, Any]
else:  # the admin classes are generic only in django-stubs
    ModelAdminBase = admin.ModelAdmin
    TabularInlineBase = admin.TabularInline


class TenantScoped:
    """A ``tenant_admin`` (staff holding that permission, ``core.authority``) sees only
    their tenant's rows — lists, detail pages and filters — and has no superuser powers;
    a superuser sees everything. ``tenant_path`` is the ORM path from the model to its
    tenant; ``None`` keeps the model (infrastructure tables) to superusers."""

    tenant_path: str | None = "tenant"

    def _tenant(self, request: HttpRequest) -> Tenant | None:
        return administered_tenant(request.user) if self.tenant_path is not None else None

    def _superuser(self, request: HttpRequest) -> bool:
        return bool(request.user.is_active and request.user.is_superuser)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._superuser(request) or self._tenant(request) is not None

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if self._superuser(request):
            return True
        tenant = self._tenant(request)
        if tenant is None:
            return False
        return (
            obj is None
            or self._scoped(obj.__class__._default_manager.all(), tenant).filter(pk=obj.pk).exists()
        )

    def _scoped(self, queryset: QuerySet[Any], tenant: Tenant) -> QuerySet[Any]:
        return queryset.filter(**{self.tenant_path or "tenant": tenant.pk})

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset: QuerySet[Any] = super().get_queryset(request)  # type: ignore[misc]
        if self._superuser(request):
            return queryset
        tenant = self._tenant(request)
        return queryset.none() if tenant is None else self._scoped(queryset, tenant)

    def get_list_filter(self, request: HttpRequest) -> Any:
        """No filter listing other tenants (or their people) for a tenant admin, and a
        filter on any other relation (a person's groups, a check's run) offers only the
        rows that the tenant's own rows point to: Django's default lists the whole table,
        every tenant's group names included."""
        filters = super().get_list_filter(request)  # type: ignore[misc]
        if self._superuser(request):
            return filters
        model = self.model  # type: ignore[attr-defined]  # a ModelAdmin's
        return [_own_choices(model, f) for f in filters if f not in ("tenant", "principal")]


def _own_choices(model: type[Model], list_filter: Any) -> Any:
    """A relation named by its field becomes a filter of the related rows in use only."""
    if isinstance(list_filter, str) and "__" not in list_filter:
        field = model._meta.get_field(list_filter)
        if field.is_relation:
            return (list_filter, admin.RelatedOnlyFieldListFilter)
    return list_filter


class ReadOnlyAdmin(TenantScoped, ModelAdminBase):
    """Immutable or service-owned rows: look, never edit, add or delete."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def admin_principal(modeladmin: admin.ModelAdmin[Any], request: HttpRequest) -> Principal | None:
    user = request.user
    principal = principal_for_user(user) if user.is_authenticated else None
    if principal is None:
        modeladmin.message_user(
            request,
            "Your admin account is not a member of a tenant, so it cannot act on memory. "
            "Create a member with manage.py create_user and grant it the permission.",
            messages.ERROR,
        )
    return principal


def run_service(
    modeladmin: admin.ModelAdmin[Any],
    request: HttpRequest,
    objects: Iterable[M],
    act: Callable[[Principal, M], str],
) -> None:
    """Call the service once per selected row; each refusal becomes its own message."""
    principal = admin_principal(modeladmin, request)
    if principal is None:
        return
    for obj in objects:
        try:
            done = act(principal, obj)
        except DomainError as exc:
            modeladmin.message_user(request, f"{obj}: {exc.detail}", messages.ERROR)
        else:
            modeladmin.message_user(request, f"{obj}: {done}", messages.SUCCESS)


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 3}))


def with_reason(
    modeladmin: admin.ModelAdmin[Any],
    request: HttpRequest,
    queryset: QuerySet[M],
    title: str,
    act: Callable[[Principal, M, str], str],
) -> TemplateResponse | None:
    """An intermediate page asks why (retire, reject, revoke), then runs the service."""
    form = ReasonForm(request.POST if "apply" in request.POST else None)
    if form.is_bound and form.is_valid():
        reason = form.cleaned_data["reason"]
        run_service(modeladmin, request, queryset, lambda p, obj: act(p, obj, reason))
        return None
    return TemplateResponse(
        request,
        "dashboard/admin_reason.html",
        {
            **modeladmin.admin_site.each_context(request),
            "title": title,
            "objects": list(queryset),
            "form": form,
            "action": request.POST.get("action", ""),
            "opts": modeladmin.model._meta,
        },
    )


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyAdmin):
    tenant_path = "version__tenant"
    list_display = ("version", "reviewer", "decision", "at")
    list_filter = ("decision",)
    search_fields = ("version__item__id", "reviewer__username")
    list_select_related = ("version", "reviewer")


@admin.register(CheckResult)
class CheckResultAdmin(ReadOnlyAdmin):
    tenant_path = "version__tenant"
    list_display = ("version", "run", "outcome", "policy_version", "ran_at")
    list_filter = ("run", "outcome")
    search_fields = ("version__item__id",)
    list_select_related = ("version",)


@admin.register(ScenarioRemoval)
class ScenarioRemovalAdmin(ReadOnlyAdmin):
    """Written by ``approvals.services.scenario_remove`` (audited, with its reason)."""

    tenant_path = "scenario__version__tenant"
    list_display = ("scenario", "removed_by", "removed_at")
    search_fields = ("scenario__version__item__id", "removed_by")
    list_select_related = ("scenario",)


@admin.register(Revalidation)
class RevalidationAdmin(ReadOnlyAdmin):
    list_display = ("id", "tenant", "status", "done", "total", "failed", "started_at")
    list_filter = ("status", "tenant")


@admin.register(RevalidatedVersion)
class RevalidatedVersionAdmin(ReadOnlyAdmin):
    """Which versions each job has counted: where a stalled job's missing ones show."""

    tenant_path = "job__tenant"
    list_display = ("job", "version")
    search_fields = ("job__id", "version__item__id")
    list_select_related = ("job", "version")


@admin.register(Outbox)
class OutboxAdmin(ReadOnlyAdmin):
    tenant_path = None  # delivery machinery: superusers only
    list_display = ("id", "kind", "tenant", "created_at", "dispatched_at", "attempts")
    list_filter = ("kind", "tenant")


@admin.register(Embedding)
class EmbeddingAdmin(ReadOnlyAdmin):
    """Which versions and entities have a vector of which model (never the vector):
    where re-embedding after a model change stands."""

    list_display = ("id", "tenant", "version", "entity", "model", "embedded_at")
    list_filter = ("model", "tenant")
    list_select_related = ("version", "entity")


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = ("event", "recipient", "tenant", "claimed_at", "sent_at")
    search_fields = ("event", "recipient__username")


@admin.register(TenantUserObjectPermission, TenantGroupObjectPermission)
class TenantPermissionAdmin(ReadOnlyAdmin):
    """Grants are made with ``create_user --grant`` (audited), not here."""

    tenant_path = "content_object"

    list_display = ("__str__", "content_object", "permission")


@admin.register(ScopeValueUserObjectPermission, ScopeValueGroupObjectPermission)
class ScopeValuePermissionAdmin(ReadOnlyAdmin):
    tenant_path = "content_object__tenant"
    list_display = ("__str__", "content_object", "permission")
