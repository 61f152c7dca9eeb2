"""Who may do what: the one authority rule for the API, the dashboard, the queue and emails.

Guardian object permissions live on the ``Tenant`` and on ``ScopeValue`` rows, granted to
a user directly or to a group the user belongs to. A person has authority over an item
when they hold the permission on the tenant, or on at least one ``ScopeValue`` named in
the item's scope; a tenant-wide enterprise rule also needs ``approve_tenant_wide_rule``
on the tenant; the proposer never counts; an inactive user holds nothing (docs/design.md,
Permissions). A person's grants are loaded once (one statement) into an ``Authority``, and
``reviewers_for`` answers for many versions at once, so lists and digests cost a fixed
number of queries, not one per row."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission, User

from core.errors import Forbidden
from core.kinds import MemoryKind

# The guardian permission models: this module is their only reader.
from core.models import (
    ScopeValue,
    ScopeValueGroupObjectPermission,
    ScopeValueUserObjectPermission,
    Tenant,
    TenantGroupObjectPermission,
    TenantUserObjectPermission,
)
from core.principals import Principal, can_see, principal_for_user
from core.sql import fetched, placeholders


class Governed(Protocol):
    """What authority reads of a memory version (``memory.models.Governed``); this
    layer sits below memory and knows versions only by this shape."""

    pk: Any
    tenant_id: int
    kind: str
    scope: Any
    required_visibility: Any
    proposed_by: str
    proposer_user_id: int | None
    owner_id: int


V = TypeVar("V", bound=Governed)

PREFERENCE, TASK_FACT, ENTERPRISE_RULE = (
    MemoryKind.PREFERENCE,
    MemoryKind.TASK_FACT,
    MemoryKind.ENTERPRISE_RULE,
)
TENANT_WIDE = {"tenant": "*"}
REVIEW_PERMISSION: dict[str, str] = {
    TASK_FACT: "review_task_fact",
    ENTERPRISE_RULE: "review_enterprise_rule",
}
TENANT_WIDE_APPROVAL = "approve_tenant_wide_rule"
RETIRE = "retire_memory"
MANAGE_WEBHOOKS = "manage_webhooks"
# Holding any of these over an item's scope lets a person open it in the dashboard.
OVERSIGHT = frozenset({*REVIEW_PERMISSION.values(), TENANT_WIDE_APPROVAL, RETIRE})

Scoped = tuple[str, str, str]  # (codename, dimension, value)


def review_permissions(version: Governed) -> tuple[str, ...]:
    """The permission that reviews this kind; a preference: any reviewer of its scope."""
    if version.kind in REVIEW_PERMISSION:
        return (REVIEW_PERMISSION[version.kind],)
    return tuple(REVIEW_PERMISSION.values())


def version_visible(version: Governed, principal: Principal) -> bool:
    """The principal holds a label of every source (and of the item's own visibility)."""
    return labels_visible(version.required_visibility, principal)


def labels_visible(required: Iterable[Iterable[str]], principal: Principal) -> bool:
    """The same rule for label sets read without their version (a resolver candidate's
    ``visibility``), so what a reviewer is shown of other items follows one rule."""
    return all(can_see(list(labels), principal.labels) for labels in required)


def is_proposer(principal: Principal, version: Governed) -> bool:
    return principal.name == version.proposed_by or (
        principal.user is not None and version.proposer_user_id == principal.user.pk
    )


@dataclass(frozen=True)
class Authority:
    """What one principal may do in its tenant; pure after ``load``."""

    principal: Principal
    on_tenant: frozenset[str]
    on_values: frozenset[Scoped]

    @classmethod
    def load(cls, principal: Principal) -> Authority:
        user = principal.user
        if user is None or not user.is_active:
            return cls(principal, frozenset(), frozenset())
        grants = _grants(principal.tenant, user_ids=[user.pk], values=None)
        on_tenant, on_values = grants.get(user.pk, (set(), set()))
        return cls(principal, frozenset(on_tenant), frozenset(on_values))

    @property
    def is_person(self) -> bool:
        user = self.principal.user
        return user is not None and user.is_active

    def has(self, codename: str) -> bool:
        """Held on the tenant itself (policy, audit, tenant-wide actions)."""
        return self.is_person and codename in self.on_tenant

    def holds(self, codename: str, scope: Mapping[str, str]) -> bool:
        """On the tenant, or on one ``ScopeValue`` the scope names."""
        return self.has(codename) or (
            self.is_person
            and any((codename, dim, str(value)) in self.on_values for dim, value in scope.items())
        )

    def may_review(self, version: Governed) -> bool:
        """Authority over the item's kind and scope (the proposer question is separate,
        so the API can say why it refuses)."""
        if not any(self.holds(p, version.scope) for p in review_permissions(version)):
            return False
        if version.kind == ENTERPRISE_RULE and dict(version.scope) == TENANT_WIDE:
            return self.has(TENANT_WIDE_APPROVAL)
        return True

    def may_decide(self, version: Governed) -> bool:
        """Approve or reject now: may review, can see it, and did not propose it. The
        queue lists and the emails announce exactly these."""
        return (
            self.may_review(version)
            and version_visible(version, self.principal)
            and not is_proposer(self.principal, version)
        )

    def may_retire(self, version: Governed) -> bool:
        """``retire_memory`` over the scope; the owner of a preference may end it too."""
        user = self.principal.user
        if not self.is_person or user is None:
            return False
        if version.kind == PREFERENCE and version.owner_id == user.pk:
            return True
        return self.holds(RETIRE, version.scope)

    def may_retire_all(self, versions: Iterable[Governed]) -> bool:
        """``may_retire`` over every version an action ends (a retirement ends the whole
        lineage in use, a revocation every version citing the source), not over one of
        them: a correction scoped to P-9 must not carry a P-10 rule out of use. Nothing
        to end proves no authority."""
        ending = list(versions)
        return bool(ending) and all(self.may_retire(v) for v in ending)

    def sees(self, version: Governed) -> bool:
        """Open it in the dashboard: visible, and theirs or within their oversight."""
        user = self.principal.user
        if not self.is_person or user is None or not version_visible(version, self.principal):
            return False
        if user.pk in (version.owner_id, version.proposer_user_id):
            return True
        return any(self.holds(p, version.scope) for p in OVERSIGHT)


def may_review(principal: Principal, version: Governed) -> bool:
    return Authority.load(principal).may_review(version)


def may_retire(principal: Principal, version: Governed) -> bool:
    return Authority.load(principal).may_retire(version)


def has_tenant_permission(principal: Principal, codename: str) -> bool:
    return Authority.load(principal).has(codename)


def require_tenant_permission(principal: Principal, codename: str, refusal: str) -> None:
    """403 unless the caller is an active person holding ``codename`` on the tenant."""
    if not has_tenant_permission(principal, codename):
        raise Forbidden(refusal)


ERASE_REFUSAL = "Erasing a subject needs the erase_subject permission."
EXPORT_REFUSAL = "Exporting a subject needs the erase_subject or view_audit permission."


def may_erase(principal: Principal) -> bool:
    """Erasure is a person's decision on the tenant: never an agent's."""
    return has_tenant_permission(principal, "erase_subject")


def may_export(principal: Principal) -> bool:
    """Whoever may erase a subject, or audit the tenant, may see everything held about it."""
    allowed = Authority.load(principal)
    return allowed.has("erase_subject") or allowed.has("view_audit")


def require_erase(principal: Principal) -> None:
    if not may_erase(principal):
        raise Forbidden(ERASE_REFUSAL)


def require_export(principal: Principal) -> None:
    if not may_export(principal):
        raise Forbidden(EXPORT_REFUSAL)


TENANT_ADMIN = "tenant_admin"


FIELDS_REFUSAL = "Changing the field catalog needs the tenant_admin permission."


def may_manage_fields(principal: Principal) -> bool:
    """The field catalog binds every proposal and marks what agents may act on: a tenant
    administrator's decision, never an agent's."""
    return has_tenant_permission(principal, TENANT_ADMIN)


def require_manage_fields(principal: Principal) -> None:
    if not may_manage_fields(principal):
        raise Forbidden(FIELDS_REFUSAL)


def may_clarify(principal: Principal, version: Governed) -> bool:
    """Answer a held proposal's question: its proposer (an agent may clarify what it was
    told), or a person who may review it."""
    return is_proposer(principal, version) or Authority.load(principal).may_review(version)


def may_change_scenarios(principal: Principal, version: Governed) -> bool:
    """Add or remove a custom scenario of a version not yet active: its proposer, or a
    person who may review it (docs/design.md: a scenario can keep an item out of use, so
    nobody else may write one, or take one away)."""
    return is_proposer(principal, version) or Authority.load(principal).may_review(version)


def administered_tenant(user: Any) -> Tenant | None:
    """The tenant whose Django admin this person may open: staff, active, a member, and
    holding ``tenant_admin`` on it. A superuser is not scoped and gets ``None`` here."""
    if not getattr(user, "is_authenticated", False) or not user.is_staff:
        return None
    principal = principal_for_user(user)
    if principal is None or not Authority.load(principal).has(TENANT_ADMIN):
        return None
    return principal.tenant


def reviewers_for(versions: Iterable[V]) -> dict[int, list[User]]:
    """For each version, the active members with an email who may decide it, by name.

    Three queries whatever the number of versions (people, tenant grants, scope-value
    grants, each direct and through groups), so a digest of N items costs the same as
    one."""
    versions = list(versions)
    result: dict[int, list[User]] = {v.pk: [] for v in versions}
    by_tenant: dict[int, list[V]] = defaultdict(list)
    for version in versions:
        by_tenant[version.tenant_id].append(version)
    for tenant_id, group in by_tenant.items():
        people = list(
            get_user_model()
            .objects.filter(is_active=True, membership__tenant_id=tenant_id)
            .exclude(email="")
            .select_related("membership__tenant")
            .order_by("username")
        )
        values = {(dim, str(value)) for v in group for dim, value in v.scope.items()}
        grants = _grants(tenant_id, user_ids=None, values=values)
        for user in people:
            principal = principal_for_user(user)
            if principal is None:
                continue
            on_tenant, on_values = grants.get(user.pk, (set(), set()))
            authority = Authority(principal, frozenset(on_tenant), frozenset(on_values))
            for version in group:
                if authority.may_decide(version):
                    result[version.pk].append(user)
    return result


def _grants(
    tenant: Tenant | int,
    *,
    user_ids: list[int] | None,
    values: set[tuple[str, str]] | None,
) -> dict[int, tuple[set[str], set[Scoped]]]:
    """Per user: codenames on the tenant and (codename, dimension, value) on scope values,
    direct and through groups, in one statement (built with the ORM, its four joined
    queries cost more to build than to run: every page and request asks). ``values=None``
    loads every scope value."""
    if user_ids is not None and not user_ids:
        return {}
    tenant_id = tenant if isinstance(tenant, int) else tenant.pk
    members = User.groups.through._meta.db_table
    statements: list[str] = []
    params: list[Any] = []
    permissions = Permission._meta.db_table
    for model, through_group, on_value in (
        (TenantUserObjectPermission, False, False),
        (TenantGroupObjectPermission, True, False),
        (ScopeValueUserObjectPermission, False, True),
        (ScopeValueGroupObjectPermission, True, True),
    ):
        if on_value and values is not None and not values:
            continue
        holder = "m" if through_group else "o"
        sql = (
            f"SELECT {holder}.user_id, p.codename, "  # noqa: S608 - table names from the models
            f"{'v.dimension, v.value' if on_value else 'NULL, NULL'} "
            f"FROM {model._meta.db_table} o JOIN {permissions} p ON p.id = o.permission_id "
            + (f"JOIN {members} m ON m.group_id = o.group_id " if through_group else "")
        )
        if on_value:
            sql += (
                f"JOIN {ScopeValue._meta.db_table} v ON v.id = o.content_object_id "
                "WHERE v.tenant_id = %s"
            )
        else:
            sql += "WHERE o.content_object_id = %s"
        params.append(tenant_id)
        if user_ids is not None:
            sql += f" AND {holder}.user_id IN ({placeholders(user_ids)})"
            params += user_ids
        if on_value and values is not None:
            sql += " AND (" + " OR ".join(["(v.dimension = %s AND v.value = %s)"] * len(values))
            sql += ")"
            params += [part for pair in sorted(values) for part in pair]
        statements.append(sql)
    result: dict[int, tuple[set[str], set[Scoped]]] = defaultdict(lambda: (set(), set()))
    for user_id, codename, dim, value in fetched(" UNION ".join(statements), params):
        if dim is None:
            result[user_id][0].add(codename)
        else:
            result[user_id][1].add((codename, dim, value))
    return dict(result)
