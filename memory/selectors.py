"""Reads of the memory layer. ``access_*`` apply tenant and visibility: the only way API
and dashboard code turn an id from a request into an object (another tenant's → 404)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from django.db import connection
from django.db.models import (
    F,
    Func,
    Model,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    TextField,
)
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from core import authority
from core.authority import require_export
from core.errors import Gone, NotFound
from core.models import Tenant
from core.principals import Principal, can_see
from memory import fulltext, semantic
from memory.lifecycle import IN_USE_OR_OPEN
from memory.models import (
    Alias,
    Entity,
    Erasure,
    MemoryItem,
    MemoryVersion,
    Policy,
    Source,
    Status,
)
from memory.resolver import Policy as ResolverPolicy
from memory.search_terms import STOP_WORDS, WORDS, fold, named, romanized
from memory.visibility import VisibleTo


def version_visible(version: MemoryVersion, principal: Principal) -> bool:
    return authority.version_visible(version, principal)


def access_source(principal: Principal, source_id: str) -> Source:
    source = Source.objects.filter(tenant=principal.tenant, pk=source_id).first()
    if source is None or not can_see(source.visibility, principal.labels):
        raise NotFound(f"No source {source_id}.")
    return source


def require_subject(tenant: Tenant, subject_id: str) -> None:
    """A resolve on a subject this tenant does not have is a 404 like any other id: an
    agent with a wrong id must not be told "no facts" (docs/api.md, Resolve)."""
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


def access_erasure(principal: Principal, erasure_id: str) -> Erasure:
    """The caller's tenant's erasure (404 for another tenant's), for whoever may export:
    one who may not learns that it exists and nothing more (403)."""
    erasure = Erasure.objects.filter(tenant=principal.tenant, pk=erasure_id).first()
    if erasure is None:
        raise NotFound(f"No erasure {erasure_id}.")
    require_export(principal)
    return erasure


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
    """Head versions of the tenant's lineages that the principal may see (in SQL, so the
    time a listing takes tells nothing of the rows it hides)."""
    heads = MemoryVersion.objects.filter(
        VisibleTo(principal), tenant=principal.tenant, number=F("item__head_version")
    )
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


# How a mention matched, strongest first: ``matched_on`` in docs/api.md's match answer.
MATCH_KINDS: tuple[str, ...] = (
    "name",
    "alias",
    "name_token",
    "alias_token",
    "alias_prefix",
    "transliteration",  # the mention in Latin letters is its name or alias (王伟: Wang Wei)
    "semantic",  # near in meaning: a misspelling, another spelling (memory.semantic)
)
MATCH_LIMIT = 50  # candidates shown; more than one is ambiguous however many there are
MATCH_SCAN = 1000  # rows read per table to find them
PREFIX_MIN = 2  # "D" is no evidence of anyone: a prefix must say at least this much
_TOKEN = re.compile(r"\w+")


def _tokens(text: str) -> tuple[str, ...]:
    return tuple(_TOKEN.findall(fold(text)))


class Folded(Func):
    """A normalized name or alias with its accents folded (``Jurgen`` is Jürgen, issue 44):
    PostgreSQL's IMMUTABLE ``memgov_fold`` (``unaccent``), read through the trigram
    indexes of memory.fulltext; on SQLite the same Python function (memory.apps)."""

    function = fulltext.FOLD
    output_field = TextField()


def _how(query: str, words: tuple[str, ...], text: str, *, alias: bool) -> str | None:
    """The strongest way ``text`` (a name or an alias) matches the normalized query."""
    if text == query:
        return "alias" if alias else "name"
    tokens = set(_tokens(text))
    if words and tokens.issuperset(words):
        return "alias_token" if alias else "name_token"
    if alias and len(query) >= PREFIX_MIN and text.startswith(query):
        return "alias_prefix"
    return None


def entity_match(*, principal: Principal, name: str, kind: str | None) -> list[tuple[Entity, str]]:
    """Every entity whose name or alias is the mention (case-insensitive), has every word
    of it as a whole word ("Dana" → "Dana Customer"), or has an alias starting with it,
    with the strongest way it matched. The caller decides only on exactly one; two or more
    are ambiguous, never merged (seed 000)."""
    query = " ".join(fold(name).split())
    words = _tokens(query)
    if not query:
        return []
    # Every way to match holds every word of the mention: the database reads only names
    # with all of them ("customer" alone is in every name of a CRM's customers).
    each_word = [Q(folded__contains=word) for word in dict.fromkeys(words)] or [
        Q(folded__contains=query)
    ]
    # An erased entity is no one's candidate any more (issue 42): nothing may name it again.
    entities = Entity.objects.filter(tenant=principal.tenant, erased_at__isnull=True)
    if kind:
        entities = entities.filter(kind=kind)
    by_name = entities.alias(folded=Folded("name_normalized")).filter(*each_word)
    by_alias = (
        Alias.objects.filter(tenant=principal.tenant, entity__erased_at__isnull=True)
        .alias(folded=Folded("normalized"))
        .filter(*each_word)
    )
    if kind:
        by_alias = by_alias.filter(entity__kind=kind)
    found: dict[str, tuple[Entity, str]] = {}

    def keep(entity: Entity, how: str | None) -> None:
        held = found.get(entity.pk)
        if how is None:
            return
        if held is None or MATCH_KINDS.index(how) < MATCH_KINDS.index(held[1]):
            found[entity.pk] = (entity, how)

    for entity in by_name.order_by("pk")[:MATCH_SCAN]:
        keep(
            entity, _how(query, words, " ".join(fold(entity.name_normalized).split()), alias=False)
        )
    for row in by_alias.select_related("entity").order_by("entity_id")[:MATCH_SCAN]:
        keep(row.entity, _how(query, words, " ".join(fold(row.normalized).split()), alias=True))
    for other in _spelled_in_latin(principal, name, entities, kind):
        keep(other, "transliteration")
    if not any(how in ("name", "alias") for _, how in found.values()):
        # Only without an exact name: one decides the match whatever else is near, and
        # embedding the mention costs a context block's every subject ~10 ms.
        for other in _near_in_meaning(principal, name, entities):
            keep(other, "transliteration" if _latin_of(other, name) else "semantic")
    ranked = sorted(found.values(), key=lambda pair: (MATCH_KINDS.index(pair[1]), pair[0].pk))
    return ranked[:MATCH_LIMIT]


def _spelled_in_latin(
    principal: Principal, name: str, entities: QuerySet[Entity], kind: str | None
) -> list[Entity]:
    """Entities whose name or an alias is the mention in Latin letters (王伟: Wang Wei)."""
    latin = " ".join(fold(romanized(name)).split())
    if not latin:
        return []
    by_name = entities.alias(folded=Folded("name_normalized")).filter(folded=latin)
    by_alias = Alias.objects.filter(tenant=principal.tenant, entity__erased_at__isnull=True)
    if kind:
        by_alias = by_alias.filter(entity__kind=kind)
    aliased = by_alias.alias(folded=Folded("normalized")).filter(folded=latin)
    return [
        *by_name[:MATCH_SCAN],
        *(row.entity for row in aliased.select_related("entity")[:MATCH_SCAN]),
    ]


def _latin_of(entity: Entity, mention: str) -> bool:
    """The mention is the entity's name in Latin letters ("Li Na" for 李娜)."""
    latin = romanized(entity.name)
    return bool(latin) and " ".join(fold(latin).split()) == " ".join(fold(mention).split())


def _near_in_meaning(principal: Principal, name: str, entities: QuerySet[Entity]) -> list[Entity]:
    """Entities whose name is near the mention's in meaning and in spelling: candidates
    only (a misspelling, another script's letters)."""
    model = semantic.model()
    if model is None:
        return []
    vector = semantic.query_vector(model, semantic.query_text(name))
    near = semantic.nearest_entities(
        model, principal.tenant.pk, vector, limit=semantic.NEAR_ENTITIES
    )
    ids = [n.id for n in near if n.similarity >= semantic.ENTITY_FLOOR]
    # Near in meaning and spelled alike: every word of the mention is (nearly) one of
    # its names' words ("Dana Kin", 王伟), not a surname shared by a company.
    words = [w for w in WORDS.findall(fold(name)) if w not in STOP_WORDS]
    held = semantic.entity_words(ids)
    ids = [e for e in ids if words and all(named(w, held.get(e, set())) for w in words)]
    return list(entities.filter(pk__in=ids).order_by("pk")) if ids else []


def match_decision(
    matches: list[tuple[Entity, str]],
) -> tuple[str, list[tuple[Entity, str]]]:
    """``matched`` only when exactly one entity has the mention as its name or an alias
    (docs/api.md, Entities), and then that entity alone; a word of a name or the start of
    an alias makes a candidate, never a match ("Jones" is not Sarah Jones for certain)."""
    exact = [match for match in matches if match[1] in ("name", "alias")]
    if len(exact) == 1:
        return "matched", exact
    return ("ambiguous" if matches else "none"), matches


def entity_list(principal: Principal, q: str = "") -> QuerySet[Entity]:
    """The tenant's entities, optionally those whose name or an alias contains ``q``."""
    entities = Entity.objects.filter(tenant=principal.tenant)
    q = " ".join(q.split()).casefold()
    if q:
        aliased = Alias.objects.filter(tenant=principal.tenant, normalized__contains=q)
        entities = entities.filter(
            Q(name_normalized__contains=q) | Q(pk__in=aliased.values("entity_id"))
        )
    return entities.prefetch_related("aliases")


def current_policy(tenant: Tenant) -> Policy:
    policy = Policy.objects.filter(tenant=tenant).order_by("-version").first()
    if policy is None:
        raise NotFound("This tenant has no policy.")
    return policy


def resolver_policy(policy: Policy) -> ResolverPolicy:
    return ResolverPolicy.from_precedence(str(policy.version), policy.precedence)


@dataclass(frozen=True)
class Reach:
    """What revoking a source would end: the versions in use or under review that cite it
    and the reader may see, and how many more it may not (they end too)."""

    shown: list[MemoryVersion]
    hidden: int


def revocation_reach(principal: Principal, source_ids: list[str]) -> dict[str, Reach]:
    """Per source, the versions a revocation retires (``approvals.services.source_revoke``
    ends every active or open version citing it), read before anyone confirms."""
    citing = MemoryVersion.objects.filter(
        tenant=principal.tenant, sources__in=source_ids, status__in=IN_USE_OR_OPEN
    ).annotate(cited=F("sources"), visible=VisibleTo(principal))
    found: dict[str, list[MemoryVersion]] = {pk: [] for pk in source_ids}
    hidden = dict.fromkeys(source_ids, 0)
    for version in citing.order_by("item_id", "number").only(
        "item_id", "number", "statement", "status", "field"
    ):
        if version.visible:
            found[str(version.cited)].append(version)
        else:
            hidden[str(version.cited)] += 1
    return {pk: Reach(found[pk], hidden[pk]) for pk in source_ids}
