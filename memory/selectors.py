"""Reads of the memory layer. ``access_*`` apply tenant and visibility: the only way API
and dashboard code turn an id from a request into an object (another tenant's → 404)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from django.db import connection
from django.db.models import F, Model, OuterRef, Prefetch, Q, QuerySet, Subquery, TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from core import authority
from core.errors import Gone, NotFound
from core.models import Tenant
from core.principals import Principal, can_see
from memory.models import Alias, Entity, MemoryItem, MemoryVersion, Policy, Source, Status
from memory.resolver import Policy as ResolverPolicy


def version_visible(version: MemoryVersion, principal: Principal) -> bool:
    return authority.version_visible(version, principal)


def access_source(principal: Principal, source_id: str) -> Source:
    source = Source.objects.filter(tenant=principal.tenant, pk=source_id).first()
    if source is None or not can_see(source.visibility, principal.labels):
        raise NotFound(f"No source {source_id}.")
    return source


def require_subject(tenant: Tenant, subject_id: str) -> None:
    """A resolve on a subject this tenant does not have is a 404 like any other id: an
    agent with a wrong id must not be told "no facts" (API.md, Resolve)."""
    erased = Entity.objects.filter(tenant=tenant, pk=subject_id).values_list("erased_at", flat=True)
    if not erased:
        raise NotFound(f"No entity {subject_id}.")
    if erased[0] is not None:
        raise Gone(f"Entity {subject_id} was erased.")


def access_entity(principal: Principal, entity_id: str) -> Entity:
    entity = (
        Entity.objects.filter(tenant=principal.tenant, pk=entity_id)
        .prefetch_related("aliases")
        .first()
    )
    if entity is None:
        raise NotFound(f"No entity {entity_id}.")
    return entity


def access_memory(principal: Principal, memory_id: str) -> MemoryItem:
    item = (
        MemoryItem.objects.filter(tenant=principal.tenant, pk=memory_id)
        .select_related("tenant", "subject")
        .first()
    )
    if item is None:
        raise NotFound(f"No memory {memory_id}.")
    head = item.versions.get(number=item.head_version)
    if not version_visible(head, principal):
        raise NotFound(f"No memory {memory_id}.")
    return item


def _related_rows(name: str) -> QuerySet[Any]:
    model = cast("type[Model]", MemoryVersion._meta.get_field(name).related_model)
    return model._default_manager.all()


def versions_with_details(queryset: QuerySet[MemoryVersion]) -> QuerySet[MemoryVersion]:
    """Everything the memory representation shows, in a fixed number of queries. The
    approvals and check results are rows of the layer above, reached through their
    relations to the version rather than by importing their models."""
    approvals = _related_rows("approvals").select_related("reviewer")
    checks = _related_rows("checks").order_by("ran_at", "id")
    active = MemoryVersion.objects.filter(item=OuterRef("item"), status=Status.ACTIVE)
    return (
        queryset.select_related("owner", "item")
        .annotate(active_number=Subquery(active.values("number")[:1]))
        .prefetch_related(
            Prefetch("approvals", queryset=approvals),
            Prefetch("checks", queryset=checks),
        )
    )


def memory_head(item: MemoryItem) -> MemoryVersion:
    return versions_with_details(item.versions.filter(number=item.head_version)).get()


def memory_versions(item: MemoryItem) -> QuerySet[MemoryVersion]:
    return versions_with_details(item.versions.order_by("number"))


def memory_version(item: MemoryItem, number: int) -> MemoryVersion:
    version = versions_with_details(item.versions.filter(number=number)).first()
    if version is None:
        raise NotFound(f"No version {number} of {item.pk}.")
    return version


@dataclass(frozen=True)
class MemoryFilters:
    subject: str | None = None
    field: str | None = None
    kind: str | None = None
    status: str | None = None
    owner: str | None = None
    scope: Mapping[str, str] | None = None


def memory_heads(principal: Principal, filters: MemoryFilters) -> QuerySet[MemoryVersion]:
    """Head versions of the tenant's lineages; visibility is applied by the caller per row
    (labels are sets of sets, which SQL cannot test portably)."""
    heads = MemoryVersion.objects.filter(tenant=principal.tenant, number=F("item__head_version"))
    conditions = Q()
    if filters.subject:
        conditions &= Q(subject_id=filters.subject)
    if filters.field:
        conditions &= Q(field=filters.field)
    if filters.kind:
        conditions &= Q(kind=filters.kind)
    if filters.status:
        conditions &= Q(status=filters.status)
    if filters.owner:
        conditions &= Q(owner__username=filters.owner)
    heads = heads.filter(conditions)
    for index, (dim, value) in enumerate((filters.scope or {}).items()):
        if connection.vendor == "postgresql":
            heads = heads.filter(scope__contains={dim: value})  # jsonb @>, GIN-indexed
        else:
            alias = f"scope_value_{index}"
            # Cast: a bare KeyTextTransform takes JSON lookups, which parse the value as JSON.
            text = Cast(KeyTextTransform(dim, "scope"), TextField())
            heads = heads.alias(**{alias: text}).filter(**{alias: value})
    return versions_with_details(heads)


def entity_match(*, principal: Principal, name: str, kind: str | None) -> list[tuple[Entity, str]]:
    """Every entity whose name or alias equals ``name`` case-insensitively, with what matched."""
    normalized = name.strip().casefold()
    entities = Entity.objects.filter(tenant=principal.tenant)
    if kind:
        entities = entities.filter(kind=kind)
    matches: dict[str, tuple[Entity, str]] = {}
    for entity in entities.filter(name_normalized=normalized):
        matches[entity.pk] = (entity, "name")
    aliases = Alias.objects.filter(tenant=principal.tenant, normalized=normalized)
    for alias in aliases.select_related("entity"):
        if (not kind or alias.entity.kind == kind) and alias.entity_id not in matches:
            matches[alias.entity_id] = (alias.entity, "alias")
    return sorted(matches.values(), key=lambda pair: pair[0].pk)


def current_policy(tenant: Tenant) -> Policy:
    policy = Policy.objects.filter(tenant=tenant).order_by("-version").first()
    if policy is None:
        raise NotFound("This tenant has no policy.")
    return policy


def resolver_policy(policy: Policy) -> ResolverPolicy:
    return ResolverPolicy.from_precedence(str(policy.version), policy.precedence)
