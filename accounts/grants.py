"""Granting guardian object permissions on the tenant or on scope values, audited.

Who may do what with those grants is answered in one place: ``core.authority``."""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import transaction
from guardian.shortcuts import assign_perm

from audit.services import audit_append
from core.models import GRANTABLE_PERMISSIONS, ScopeValue, Tenant


def permission_grant(
    *,
    tenant: Tenant,
    user: User | None = None,
    group: Group | None = None,
    codename: str,
    dimension: str | None = None,
    value: str | None = None,
    actor: str = "operator",
) -> None:
    """Grant to a person or to a group (its members hold it while they belong), on the
    tenant or on ``dimension=value`` (creating that scope value)."""
    if (user is None) == (group is None):
        raise ValueError("grant to exactly one of a user or a group")
    holder: User | Group
    if user is not None:
        holder, kind, name = user, "user", user.get_username()
    else:
        assert group is not None  # noqa: S101 - checked just above
        holder, kind, name = group, "group", group.name
    if codename not in GRANTABLE_PERMISSIONS:
        raise ValueError(f"unknown permission {codename!r}; one of {sorted(GRANTABLE_PERMISSIONS)}")
    with transaction.atomic():
        target: Tenant | ScopeValue = tenant
        if dimension is not None:
            target, _ = ScopeValue.objects.get_or_create(
                tenant=tenant, dimension=dimension, value=value or ""
            )
        assign_perm(f"core.{codename}", holder, target)
        audit_append(
            tenant=tenant,
            actor=actor,
            action="permission.granted",
            target_type=kind,
            target_id=name,
            data={"permission": codename, "on": f"{dimension}={value}" if dimension else "tenant"},
        )
