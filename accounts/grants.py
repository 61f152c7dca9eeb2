"""Granting guardian object permissions on the tenant or on scope values, audited.

Who may do what with those grants is answered in one place: ``core.authority``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from guardian.utils import get_group_obj_perms_model, get_user_obj_perms_model

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
        targets: list[tuple[str, Tenant | ScopeValue]] = []
        events = []
        for codename, dimension, value in grants:
            target: Tenant | ScopeValue = tenant
            if dimension is not None:
                target, _ = ScopeValue.objects.get_or_create(
                    tenant=tenant, dimension=dimension, value=value or ""
                )
            targets.append((codename, target))
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
        _assign(holder, targets)
        audit_append_many(tenant=tenant, events=events)


def _assign(holder: User | Group, targets: list[tuple[str, Tenant | ScopeValue]]) -> None:
    """guardian's object permissions, one insert per kind of target (``assign_perm``
    reads and writes once per grant); a grant the holder already has stays as it is."""
    types = ContentType.objects.get_for_models(Tenant, ScopeValue)
    permissions = {
        (p.content_type_id, p.codename): p
        for p in Permission.objects.filter(
            content_type__in=types.values(), codename__in={c for c, _ in targets}
        )
    }
    by_user = isinstance(holder, User)
    rows: dict[Any, list[Any]] = {}
    for codename, target in targets:
        # The direct foreign-key model guardian keeps this target's grants in.
        model = get_user_obj_perms_model(target) if by_user else get_group_obj_perms_model(target)
        permission = permissions[(types[type(target)].pk, codename)]
        row = model(permission=permission, content_object=target)
        setattr(row, "user" if by_user else "group", holder)
        rows.setdefault(model, []).append(row)
    for model, made in rows.items():
        model.objects.bulk_create(made, ignore_conflicts=True)
