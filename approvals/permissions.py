"""Granting guardian object permissions on the tenant or on scope values, audited.

Who may do what with those grants is answered in one place: ``core.authority``."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from guardian.shortcuts import assign_perm

from audit.services import audit_append
from memory.models import REVIEW_PERMISSIONS, ScopeValue, Tenant


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
