"""Who is calling: an agent (service principal) or a person, always inside one tenant."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.models import ApiKey, Tenant

if TYPE_CHECKING:
    from django.contrib.auth.models import User


@dataclass(frozen=True)
class Principal:
    tenant: Tenant
    name: str  # "agent:<name>" or "user:<username>", as written in proposed_by and audit
    labels: frozenset[str]
    user: User | None = None
    api_key: ApiKey | None = None

    @property
    def is_agent(self) -> bool:
        return self.user is None


def principal_for_key(key: ApiKey) -> Principal:
    """An agent key carries its own labels; a person's key, the person's current ones
    (their membership, read with the key on every request: never a stale grant)."""
    if key.principal == ApiKey.Principal.AGENT:
        labels = frozenset(str(label) for label in key.labels)
        return Principal(tenant=key.tenant, name=key.principal_name, labels=labels, api_key=key)
    user = key.user
    assert user is not None  # noqa: S101 - guaranteed by the check constraint
    membership = getattr(user, "membership", None)
    labels = frozenset(str(label) for label in (membership.labels if membership else ()))
    return Principal(
        tenant=key.tenant, name=key.principal_name, labels=labels, user=user, api_key=key
    )


def principal_for_user(user: User) -> Principal | None:
    """A logged-in person (dashboard session) acts with their membership's labels; a
    deactivated one is nobody."""
    membership = getattr(user, "membership", None)
    if membership is None or not user.is_active:
        return None
    labels = frozenset(str(label) for label in membership.labels)
    return Principal(
        tenant=membership.tenant, name=f"user:{user.get_username()}", labels=labels, user=user
    )


def can_see(visibility: list[str] | tuple[str, ...], labels: frozenset[str]) -> bool:
    """A label set is satisfied by ``*`` or by one shared label."""
    return "*" in visibility or not labels.isdisjoint(visibility)
