"""Tenants, their people and API keys: the operator's writes, each audited."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.keys import generate_key, hash_key
from audit.services import audit_append
from core.errors import InvalidContent
from core.models import ApiKey, Membership, Tenant, validate_time_zone

# What a new tenant starts with beyond its row (memory's first policy), written in the
# transaction that creates it. The layers above register theirs at start in
# ``AppConfig.ready`` (memory/apps.py; decision 0001: this layer cannot import them); each
# gets the tenant and the actor and returns what it adds to the ``tenant.created`` event.
TenantStarter = Callable[[Tenant, str], Mapping[str, Any]]
_starters: list[TenantStarter] = []


def tenant_starter(starter: TenantStarter) -> None:
    """Register what every new tenant starts with (called from ``AppConfig.ready``)."""
    if starter not in _starters:
        _starters.append(starter)


def tenant_create(*, slug: str, name: str = "", actor: str = "operator") -> Tenant:
    with transaction.atomic(durable=True):
        tenant = Tenant.objects.create(slug=slug, name=name or slug)
        data: dict[str, Any] = {}
        for starter in _starters:
            data.update(starter(tenant, actor))
        audit_append(
            tenant=tenant,
            actor=actor,
            action="tenant.created",
            target_type="tenant",
            target_id=tenant.slug,
            data=data,
        )
    return tenant


def tenant_settings_check(
    *,
    approvals_required: int | None = None,
    revalidation_failure: str | None = None,
    time_zone: str | None = None,
) -> None:
    """Refuse settings a tenant may not have (InvalidContent naming each), before anything
    is written: a tenant is not created with settings that are then refused."""
    if time_zone is not None:
        try:
            validate_time_zone(time_zone)
        except ValidationError as exc:
            raise InvalidContent({"time_zone": exc.messages}) from exc
    if revalidation_failure is not None and (
        revalidation_failure not in Tenant.RevalidationFailure.values
    ):
        raise InvalidContent({"revalidation_failure": ["must be suspend or flag"]})
    if approvals_required is not None and approvals_required < 1:
        raise InvalidContent({"approvals_required": ["must be at least 1"]})


def tenant_update_settings(
    *,
    tenant: Tenant,
    actor: str = "operator",
    approvals_required: int | None = None,
    revalidation_failure: str | None = None,
    time_zone: str | None = None,
) -> Tenant:
    """Change a tenant's governance settings, audited with old and new values."""
    tenant_settings_check(
        approvals_required=approvals_required,
        revalidation_failure=revalidation_failure,
        time_zone=time_zone,
    )
    with transaction.atomic(durable=True):
        locked = Tenant.objects.select_for_update(no_key=True).get(pk=tenant.pk)
        changes: dict[str, dict[str, Any]] = {}
        wanted = {
            "approvals_required": approvals_required,
            "revalidation_failure": revalidation_failure,
            "time_zone": time_zone,
        }
        for name, value in wanted.items():
            if value is not None and getattr(locked, name) != value:
                changes[name] = {"from": getattr(locked, name), "to": value}
                setattr(locked, name, value)
        if changes:
            locked.save(update_fields=list(changes))
            audit_append(
                tenant=locked,
                actor=actor,
                action="tenant.settings_changed",
                target_type="tenant",
                target_id=locked.slug,
                data=changes,
            )
    return locked


def user_create(
    *,
    tenant: Tenant,
    username: str,
    password: str | None,
    email: str = "",
    labels: Sequence[str] = (),
    actor: str = "operator",
    staff: bool = False,
) -> User:
    """``staff``: may sign in to the Django admin, which shows them their tenant's rows
    when they also hold ``tenant_admin`` (``core.authority.administered_tenant``)."""
    with transaction.atomic(durable=True):
        user = get_user_model().objects.create_user(
            username=username, email=email, password=password, is_staff=staff
        )
        Membership.objects.create(user=user, tenant=tenant, labels=list(labels))
        audit_append(
            tenant=tenant,
            actor=actor,
            action="user.created",
            target_type="user",
            target_id=username,
            data={"labels": sorted(labels), "staff": staff},
        )
    return user


def api_key_create(
    *,
    tenant: Tenant,
    agent_name: str = "",
    user: User | None = None,
    labels: Sequence[str] = (),
    expires_in: timedelta | None = None,
    actor: str = "operator",
) -> tuple[ApiKey, str]:
    """Return the key row and the raw key, which exists only in this return value."""
    lookup, raw = generate_key()
    principal = ApiKey.Principal.USER if user else ApiKey.Principal.AGENT
    with transaction.atomic(durable=True):
        key = ApiKey.objects.create(
            tenant=tenant,
            prefix=lookup,
            key_hash=hash_key(raw),
            principal=principal,
            agent_name=agent_name if user is None else "",
            user=user,
            labels=list(labels),
            lifetime=expires_in,
            expires_at=timezone.now() + expires_in if expires_in else None,
        )
        audit_append(
            tenant=tenant,
            actor=actor,
            action="api_key.created",
            target_type="api_key",
            target_id=lookup,
            data={
                "principal": key.principal_name,
                "expires_at": key.expires_at.isoformat() if key.expires_at else None,
            },
        )
    return key, raw


def api_key_revoke(*, key: ApiKey, actor: str = "operator") -> ApiKey:
    """A revoked key stops authenticating on its next request; the row stays for audit."""
    with transaction.atomic(durable=True):
        locked = (
            ApiKey.objects.select_for_update(of=("self",), no_key=True)
            .select_related("tenant")
            .get(pk=key.pk)
        )
        if locked.revoked_at is None:
            locked.revoked_at = timezone.now()
            locked.save(update_fields=["revoked_at"])
            audit_append(
                tenant=locked.tenant,
                actor=actor,
                action="api_key.revoked",
                target_type="api_key",
                target_id=locked.prefix,
                data={},
            )
    return locked
