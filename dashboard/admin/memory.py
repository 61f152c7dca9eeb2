"""Django admin for the memory layer: read-only data, status changes as service actions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from accounts import people
from approvals import services as review
from core.errors import Conflict
from core.models import ApiKey, IdempotencyRecord, Membership, ScopeValue, Tenant
from core.principals import Principal
from dashboard.admin.approvals import (
    ReadOnlyAdmin,
    TabularInlineBase,
    TenantScoped,
    run_service,
    with_reason,
)
from memory.models import (
    Alias,
    Clarification,
    Entity,
    EntityReference,
    FieldDefinition,
    MemoryItem,
    MemoryVersion,
    Policy,
    Scenario,
    Source,
    TaskFlag,
)
from memory.selectors import access_memory, access_source


@admin.register(Tenant)
class TenantAdmin(ReadOnlyAdmin):
    tenant_path = "pk"
    list_display = (
        "slug",
        "name",
        "approvals_required",
        "time_zone",
        "source_content_days",
        "revalidation_failure",
    )
    search_fields = ("slug", "name")


@admin.register(Membership)
class MembershipAdmin(ReadOnlyAdmin):
    list_display = ("user", "tenant", "labels")
    list_filter = ("tenant",)


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdmin):
    list_display = (
        "prefix",
        "tenant",
        "principal",
        "agent_name",
        "user",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )
    list_filter = ("tenant", "principal")
    exclude = ("key_hash",)


if TYPE_CHECKING:
    UserAdminBase = UserAdmin[User]
else:  # generic only in django-stubs
    UserAdminBase = UserAdmin

admin.site.unregister(User)


@admin.register(User)
class PersonAdmin(TenantScoped, UserAdminBase):
    """Django's user admin, with (de)activation through the audited services: editing
    ``is_active`` on the form would change a person's powers without an audit event. A
    tenant admin sees the tenant's people and (de)activates them through the same
    services; only a superuser edits accounts (staff, superuser, passwords)."""

    tenant_path = "membership__tenant"

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._superuser(request)  # passwords, staff and superuser flags

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self._superuser(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._superuser(request)

    def has_deactivate_permission(self, request: HttpRequest) -> bool:
        """The (de)activation actions: a superuser, or a tenant admin on their people."""
        return self.has_view_permission(request)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return (*super().get_readonly_fields(request, obj), "is_active")

    actions = ("deactivate_selected", "reactivate_selected")
    list_display = ("username", "email", "is_active", "is_staff", "last_login")

    @admin.action(description="Deactivate selected people (audited)", permissions=["deactivate"])
    def deactivate_selected(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self._set_active(request, queryset, people.user_deactivate, "deactivated")

    @admin.action(description="Reactivate selected people (audited)", permissions=["deactivate"])
    def reactivate_selected(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        self._set_active(request, queryset, people.user_reactivate, "reactivated")

    def _set_active(
        self,
        request: HttpRequest,
        queryset: QuerySet[User],
        service: Callable[..., User],
        done: str,
    ) -> None:
        actor = f"user:{request.user.get_username()}"
        for user in queryset.filter(membership__isnull=False):
            if user.pk == request.user.pk:
                self.message_user(request, f"{user}: you cannot change yourself", messages.ERROR)
                continue
            service(user=user, actor=actor)
            self.message_user(request, f"{user}: {done}", messages.SUCCESS)


@admin.register(ScopeValue)
class ScopeValueAdmin(ReadOnlyAdmin):
    list_display = ("tenant", "dimension", "value")
    list_filter = ("tenant", "dimension")


class AliasInline(TabularInlineBase):
    model = Alias
    fk_name = "entity"
    extra = 0
    fields = ("alias", "source", "created_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Entity | None = None) -> bool:
        return False


@admin.register(Entity)
class EntityAdmin(ReadOnlyAdmin):
    list_display = ("name", "kind", "id", "tenant", "external_ref")
    list_filter = ("tenant", "kind")
    search_fields = ("id", "name", "aliases__alias")
    inlines = (AliasInline,)


@admin.register(Alias)
class AliasAdmin(ReadOnlyAdmin):
    list_display = ("alias", "entity", "tenant")
    search_fields = ("alias",)


def _revoke(principal: Principal, source: Source, reason: str) -> str:
    affected = review.source_revoke(
        principal=principal, source=access_source(principal, source.pk), reason=reason
    )
    return f"revoked; retired {', '.join(affected) or 'nothing'}"


@admin.register(Source)
class SourceAdmin(ReadOnlyAdmin):
    list_display = ("id", "tenant", "kind", "external_ref", "received_at", "revoked_at")
    list_filter = ("tenant", "kind")
    search_fields = ("id", "external_ref")
    actions = ("revoke_selected",)

    @admin.action(description="Revoke selected sources (retires every memory based on them)")
    def revoke_selected(
        self, request: HttpRequest, queryset: QuerySet[Source]
    ) -> TemplateResponse | None:
        return with_reason(self, request, queryset, "Revoke sources", _revoke)


def _head_item(principal: Principal, version: MemoryVersion) -> MemoryItem:
    """The service acts on a lineage's head; acting on an older version would surprise."""
    item = access_memory(principal, version.item_id)
    if version.number != item.head_version:
        raise Conflict(f"version {version.number} is not the head (v{item.head_version}).")
    return item


def _approve(principal: Principal, version: MemoryVersion) -> str:
    done = review.version_approve(
        principal=principal, item=_head_item(principal, version), comment="approved in admin"
    )
    return f"approved; now {done.status}"


def _reject(principal: Principal, version: MemoryVersion, reason: str) -> str:
    review.version_reject(principal=principal, item=_head_item(principal, version), reason=reason)
    return "rejected"


def _recheck(principal: Principal, version: MemoryVersion) -> str:
    review.version_recheck(principal=principal, item=_head_item(principal, version))
    return "checks running again"


def _retire_item(principal: Principal, item: MemoryItem, reason: str) -> str:
    flagged = review.memory_retire(
        principal=principal, item=access_memory(principal, item.pk), reason=reason
    )
    return f"retired; {len(flagged)} task(s) flagged"


class ScenarioInline(TabularInlineBase):
    model = Scenario
    extra = 0
    fields = ("kind", "context", "valid_at", "expect", "created_by")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: MemoryVersion | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(MemoryVersion)
class MemoryVersionAdmin(ReadOnlyAdmin):
    # A reviewer's question — what does it claim, is it waiting or in use, where does it
    # apply, whose is it — in six columns that fit 1400 px.
    list_display = ("claim", "kind", "status", "scope_text", "owner", "recorded")
    list_filter = ("status", "kind", "tenant")
    search_fields = ("item__id", "field", "statement")
    list_select_related = ("item", "owner", "tenant")
    exclude = ("sources",)
    inlines = (ScenarioInline,)
    actions = ("approve_selected", "reject_selected", "recheck_selected")

    @admin.display(description="Claim", ordering="statement")
    def claim(self, version: MemoryVersion) -> str:
        statement = version.statement
        short = statement if len(statement) <= 80 else f"{statement[:79]}…"
        return f"{short} ({version.item_id} v{version.number})"

    @admin.display(description="Recorded", ordering="recorded_at")
    def recorded(self, version: MemoryVersion) -> str:
        """Short and in the tenant's zone, so the column never runs out of the list."""
        return f"{version.recorded_at.astimezone(version.tenant.zone):%Y-%m-%d %H:%M %Z}"

    @admin.display(description="Scope")
    def scope_text(self, version: MemoryVersion) -> str:
        return " ".join(f"{d}={v}" for d, v in sorted(version.scope.items())) or "unscoped"

    @admin.action(description="Approve selected versions (as you)")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[MemoryVersion]) -> None:
        run_service(self, request, queryset, _approve)

    @admin.action(description="Reject selected versions (as you)")
    def reject_selected(
        self, request: HttpRequest, queryset: QuerySet[MemoryVersion]
    ) -> TemplateResponse | None:
        return with_reason(self, request, queryset, "Reject versions", _reject)

    @admin.action(description="Run the checks of selected versions again")
    def recheck_selected(self, request: HttpRequest, queryset: QuerySet[MemoryVersion]) -> None:
        run_service(self, request, queryset, _recheck)


@admin.register(MemoryItem)
class MemoryItemAdmin(ReadOnlyAdmin):
    list_display = ("id", "tenant", "kind", "subject", "field", "head_version", "created_at")
    list_filter = ("tenant", "kind")
    search_fields = ("id", "field", "subject_mention")
    list_select_related = ("tenant", "subject")
    actions = ("retire_selected",)

    @admin.action(description="Retire selected memories (as you)")
    def retire_selected(
        self, request: HttpRequest, queryset: QuerySet[MemoryItem]
    ) -> TemplateResponse | None:
        return with_reason(self, request, queryset, "Retire memories", _retire_item)


@admin.register(Scenario)
class ScenarioAdmin(ReadOnlyAdmin):
    tenant_path = "version__tenant"
    list_display = ("version", "kind", "expect", "created_by", "created_at")


@admin.register(Policy)
class PolicyAdmin(ReadOnlyAdmin):
    """Published from the dashboard's policy page, which starts re-validation."""

    list_display = ("tenant", "version", "published_by", "published_at")
    list_filter = ("tenant",)


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ReadOnlyAdmin):
    tenant_path = None
    list_display = ("tenant", "principal", "key", "response_status", "created_at")


@admin.register(TaskFlag)
class TaskFlagAdmin(ReadOnlyAdmin):
    list_display = ("task_id", "item", "version_number", "event", "at")
    list_filter = ("event",)
    search_fields = ("task_id", "item__id")


@admin.register(EntityReference)
class EntityReferenceAdmin(ReadOnlyAdmin):
    """Written with the version that names the entity (memory.references)."""

    list_display = ("version", "entity", "path", "tenant")
    search_fields = ("entity__id", "version__item__id")


@admin.register(FieldDefinition)
class FieldDefinitionAdmin(ReadOnlyAdmin):
    """Edited on the dashboard's field catalog page or ``PUT /api/v1/fields/{name}``, which
    validate the schema and audit the change."""

    list_display = ("name", "tenant", "authority_name", "default_expiry_days", "updated_at")
    search_fields = ("name",)


@admin.register(Clarification)
class ClarificationAdmin(ReadOnlyAdmin):
    """Answered through ``POST /api/v1/memories/{id}/clarify`` or the item page."""

    list_display = ("version", "member", "mention", "asked_at", "answered_at", "answered_by")
    list_filter = ("member",)
