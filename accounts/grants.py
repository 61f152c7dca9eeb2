"""Granting guardian object permissions on the tenant or on scope values, audited.

Who may do what with those grants is answered in one place: ``core.authority``."""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import Group, User
from django.db import transaction
from guardian.shortcuts import assign_perm

from audit.services import AuditEntry, audit_append_many
from core.models import GRANTABLE_PERMISSIONS, ScopeValue, Tenant

# A permission's codename and the scope value it is on (``dimension``, ``value``), or the
# tenant (both None).
Grant = tuple[str, str | None, str | None]


def grant_from_text(text: str) -> Grant:
    """``PERM`` or ``PERM@DIM=VALUE``, as the demo's people and the tests write grants."""
    codename, _, target = text.partition("@")
    dimension, _, value = target.partition("=")
    return codename, dimension or None, value or None


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
    permissions_grant(
        tenant=tenant, user=user, group=group, grants=[(codename, dimension, value)], actor=actor
    )


def permissions_grant(
    *,
    tenant: Tenant,
    user: User | None = None,
    group: Group | None = None,
    grants: Sequence[Grant],
    actor: str = "operator",
) -> None:
    """Several grants to one holder in one transaction, each audited as its own event with
    the tenant's chain locked once: a new person's dozen grants are one step, not twelve."""
    if (user is None) == (group is None):
        raise ValueError("grant to exactly one of a user or a group")
    holder: User | Group
    if user is not None:
        holder, kind, name = user, "user", user.get_username()
    else:
        assert group is not None  # noqa: S101 - checked just above
        holder, kind, name = group, "group", group.name
    unknown = sorted({codename for codename, _, _ in grants} - set(GRANTABLE_PERMISSIONS))
    if unknown:
        raise ValueError(
            f"unknown permission {unknown[0]!r}; one of {sorted(GRANTABLE_PERMISSIONS)}"
        )
    with transaction.atomic():
        events = []
        for codename, dimension, value in grants:
            target: Tenant | ScopeValue = tenant
            if dimension is not None:
                target, _ = ScopeValue.objects.get_or_create(
                    tenant=tenant, dimension=dimension, value=value or ""
                )
            assign_perm(f"core.{codename}", holder, target)
            on = f"{dimension}={value}" if dimension else "tenant"
            events.append(
                AuditEntry(
                    actor=actor,
                    action="permission.granted",
                    target_type=kind,
                    target_id=name,
                    data={"permission": codename, "on": on},
                )
            )
        audit_append_many(tenant=tenant, events=events)
