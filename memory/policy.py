"""The tenant's resolution policy: a new version, audited (revalidation is started by
approvals.revalidation in the same transaction)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.chain import digest
from audit.services import audit_append
from core.authority import require_tenant_permission
from core.errors import InvalidContent
from core.models import Tenant
from core.principals import Principal
from memory import generations
from memory.models import Policy
from memory.resolver import Policy as ResolverPolicy
from memory.resolver import PolicyError, check_publishable

MANAGE_POLICY_REFUSAL = "Publishing or re-validating policy needs the manage_policy permission."


def policy_publish(*, principal: Principal, precedence: Mapping[str, Any], reason: str) -> Policy:
    """A new policy version on its own (the API publishes with its revalidation job)."""
    with transaction.atomic(durable=True):
        return policy_record(principal=principal, precedence=precedence, reason=reason)


def proposed_policy(precedence: Mapping[str, Any]) -> ResolverPolicy:
    """A precedence as the resolver would apply it, if it may be published (else a 422
    naming ``precedence``): the one parse for publishing and for a dry run."""
    try:
        checked = ResolverPolicy.from_precedence("new", precedence)
        check_publishable(checked)
    except PolicyError as exc:
        raise InvalidContent({"precedence": [str(exc)]}) from exc
    return checked


def policy_record(*, principal: Principal, precedence: Mapping[str, Any], reason: str) -> Policy:
    """Record a new policy version inside the caller's transaction, audited."""
    require_tenant_permission(principal, "manage_policy", MANAGE_POLICY_REFUSAL)
    checked = proposed_policy(precedence)
    Tenant.objects.select_for_update(no_key=True).get(pk=principal.tenant.pk)
    latest = Policy.objects.filter(tenant=principal.tenant).order_by("-version").first()
    policy = Policy.objects.create(
        tenant=principal.tenant,
        version=(latest.version if latest else 0) + 1,
        precedence=checked.to_precedence(),
        reason=reason,
        published_by=principal.name,
        published_at=timezone.now(),
    )
    audit_append(
        tenant=principal.tenant,
        actor=principal.name,
        action="policy.published",
        target_type="policy",
        target_id=str(policy.version),
        data={"precedence": policy.precedence, "reason_sha256": digest(reason)},
    )
    generations.invalidate_policy_on_commit(principal.tenant.pk)
    return policy


def policy_first(tenant: Tenant, actor: str) -> dict[str, Any]:
    """A new tenant's first policy, the resolver's default precedence, in the transaction
    that creates the tenant (registered with ``accounts.tenancy.tenant_starter``)."""
    policy = Policy.objects.create(
        tenant=tenant,
        version=1,
        precedence=ResolverPolicy(version="1").to_precedence(),
        reason="initial policy",
        published_by=actor,
        published_at=timezone.now(),
    )
    return {"policy_version": policy.version}
