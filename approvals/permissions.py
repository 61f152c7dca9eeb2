"""Who may decide what: guardian object permissions on the tenant or on scope values.

A reviewer has authority over an item when it holds the permission on the tenant, or on
at least one ``ScopeValue`` named in the item's scope (DESIGN.md, Permissions)."""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from guardian.shortcuts import assign_perm

from approvals.models import (
    ScopeValueGroupObjectPermission,
    ScopeValueUserObjectPermission,
    TenantGroupObjectPermission,
    TenantUserObjectPermission,
)
from audit.services import audit_append
from memory.errors import Forbidden
from memory.models import REVIEW_PERMISSIONS, ScopeValue, Tenant
from memory.principals import Principal


def user_has_tenant_permission(user: User, tenant: Tenant, codename: str) -> bool:
    direct = TenantUserObjectPermission.objects.filter(
        user=user, content_object=tenant, permission__codename=codename
    )
    via_group = TenantGroupObjectPermission.objects.filter(
        group__user=user, content_object=tenant, permission__codename=codename
    )
    return direct.exists() or via_group.exists()


def has_tenant_permission(principal: Principal, codename: str) -> bool:
    if principal.user is None or not principal.user.is_active:
        return False
    return user_has_tenant_permission(principal.user, principal.tenant, codename)


def require_tenant_permission(principal: Principal, codename: str, refusal: str) -> None:
    """403 unless the caller is a person holding ``codename`` on the tenant itself."""
    if not has_tenant_permission(principal, codename):
        raise Forbidden(refusal)


def _scope_condition(scope: Mapping[str, str]) -> Q:
    condition = Q(pk__in=[])
    for dim, value in scope.items():
        condition |= Q(content_object__dimension=dim, content_object__value=value)
    return condition


def has_scope_authority(principal: Principal, codename: str, scope: Mapping[str, str]) -> bool:
    """Tenant-wide permission, or the permission on one of the scope's values."""
    if has_tenant_permission(principal, codename):
        return True
    if principal.user is None or not scope:
        return False
    values = _scope_condition(scope) & Q(
        content_object__tenant=principal.tenant, permission__codename=codename
    )
    direct = ScopeValueUserObjectPermission.objects.filter(values, user=principal.user)
    via_group = ScopeValueGroupObjectPermission.objects.filter(values, group__user=principal.user)
    return direct.exists() or via_group.exists()


def permission_grant(
    *,
    user: User,
    tenant: Tenant,
    codename: str,
    dimension: str | None = None,
    value: str | None = None,
    actor: str = "operator",
) -> None:
    """Grant on the tenant, or on ``dimension=value`` (creating that scope value)."""
    if codename not in REVIEW_PERMISSIONS:
        raise ValueError(f"unknown permission {codename!r}; one of {sorted(REVIEW_PERMISSIONS)}")
    with transaction.atomic():
        target: Tenant | ScopeValue = tenant
        if dimension is not None:
            target, _ = ScopeValue.objects.get_or_create(
                tenant=tenant, dimension=dimension, value=value or ""
            )
        assign_perm(f"memory.{codename}", user, target)
        audit_append(
            tenant=tenant,
            actor=actor,
            action="permission.granted",
            target_type="user",
            target_id=user.get_username(),
            data={"permission": codename, "on": f"{dimension}={value}" if dimension else "tenant"},
        )
