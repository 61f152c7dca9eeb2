"""The agents' read side, whatever surface asks (REST in ``api.discovery``, MCP in
``agent_mcp.discovery_tools``): search, the facts about an entity, the caller's own
proposals, entity kinds and matching by external ref. Like ``agent_interface.answers``: validate,
call the one selector or service, represent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rest_framework import serializers

from agent_interface.answers import validated
from agent_interface.serializers import QUERY_TEXT, StrictInput
from approvals import wording
from core.cursors import CURSOR_RULE, MAX_CURSOR_CHARS, NOT_GIVEN_OUT, CursorCodec
from core.errors import InvalidContent, NotFound
from core.kinds import MemoryKind
from core.principals import Principal
from memory import discovery, entities, hybrid, references, search, search_terms, selectors
from memory.models import Status
from memory.representations import entity_representation, memory_representation

DEFAULT_LIMIT = 20  # an agent reads candidates into its context: a short page
MAX_LIMIT = 200  # as every list of the API (docs/api.md, Conventions)


class _QueryInput(StrictInput):
    """Query parameters: their texts hold no control character (``core.inputs``)."""

    text_rule = QUERY_TEXT


class PageQuery(_QueryInput):
    limit = serializers.IntegerField(
        min_value=1, max_value=MAX_LIMIT, default=DEFAULT_LIMIT, help_text="default 20"
    )
    cursor = serializers.CharField(
        max_length=MAX_CURSOR_CHARS,
        required=False,
        validators=[CURSOR_RULE],
        help_text="From the previous page's next link, unchanged.",
    )


class SearchInput(PageQuery):
    q = serializers.CharField(
        max_length=search.QUERY_MAX, help_text='Words, "a phrase", or, -word.'
    )
    subject = serializers.CharField(max_length=40, required=False, help_text="Only facts about it.")
    kind = serializers.ChoiceField(choices=MemoryKind.choices, required=False)
    status = serializers.ChoiceField(choices=Status.choices, required=False)


class ProposalsInput(PageQuery):
    status = serializers.ChoiceField(choices=Status.choices, required=False)


class EntityFactsInput(PageQuery):
    entity_id = serializers.CharField(max_length=40)


class ExternalRefInput(_QueryInput):
    external_ref = serializers.CharField(max_length=200)
    kind = serializers.CharField(max_length=50, required=False, allow_blank=True)


@dataclass(frozen=True)
class Page:
    """One page of an answer, and the cursor of the next (None on the last)."""

    results: list[dict[str, Any]]
    next_cursor: str | None
    match: str | None = None  # search only: "all" or "some" (memory.search)


# Each list's cursors are its own (core.cursors): signed, so one not given out is a 422.
SEARCH_CURSOR = CursorCodec("search", (int, str, str, int))  # Candidate.key
# Given out before a key named the version (issue 44): still read, as after every version.
_SEARCH_CURSOR_UNVERSIONED = CursorCodec("search", (int, str, str))
PROPOSALS_CURSOR = CursorCodec("proposals", (int,))
ENTITY_FACTS_CURSOR = CursorCodec("entity-facts", (str, str))  # (entity, last item)


def _search_key(cursor: str) -> tuple[int, str, str, int]:
    try:
        score, kind, ident, version = SEARCH_CURSOR.decode(cursor)
    except InvalidContent:
        score, kind, ident = _SEARCH_CURSOR_UNVERSIONED.decode(cursor)
        version = 2**31
    return (int(score), str(kind), str(ident), int(version))


def searched(principal: Principal, data: Any) -> Page:
    """Candidates for ``q``, best first; never a fact to act on (docs/api.md, Search)."""
    valid = validated(SearchInput, data)
    q = " ".join(valid["q"].split())
    if not search_terms.parse(q):
        raise InvalidContent(
            {"q": ["must contain at least one word to find that is not a stop word or excluded"]}
        )
    subject = valid.get("subject")
    if subject:
        selectors.require_subject(principal.tenant, subject)
    status = valid.get("status")
    query = search.SearchQuery(
        q=q,
        subject=subject,
        kind=valid.get("kind"),
        statuses=(status,) if status else search.DEFAULT_STATUSES,
    )
    found = hybrid.search_hybrid(principal, query)
    candidates = found.candidates
    if valid.get("cursor"):
        after = _search_key(valid["cursor"])
        candidates = [c for c in candidates if c.key > after]
    limit = valid["limit"]
    page = candidates[:limit]
    more = len(candidates) > limit
    search.explain(page, q, found.match)
    return Page(
        results=[_candidate(c) for c in page],
        next_cursor=SEARCH_CURSOR.encode(page[-1].key) if more else None,
        match=found.match,
    )


def _candidate(candidate: search.Candidate) -> dict[str, Any]:
    return {
        "type": candidate.type,
        "id": candidate.id,
        **candidate.body,
        "matched": sorted(candidate.matched),
        "score": round(candidate.score, 4),
    }


def _after_int(data: dict[str, Any]) -> int | None:
    if not data.get("cursor"):
        return None
    return int(PROPOSALS_CURSOR.decode(data["cursor"])[0])


def my_proposals(principal: Principal, data: Any) -> Page:
    """The versions the caller proposed, oldest first, each with why it is where it is."""
    valid = validated(ProposalsInput, data)
    limit = valid["limit"]
    rows = discovery.proposals_of(
        principal, status=valid.get("status"), after=_after_int(valid), limit=limit + 1
    )
    page = rows[:limit]
    return Page(
        results=[
            discovery.proposal_representation(v, wording.proposal_reasons(v, principal))
            for v in page
        ],
        next_cursor=PROPOSALS_CURSOR.encode([page[-1].pk]) if len(rows) > limit else None,
    )


def entity_kinds(principal: Principal) -> dict[str, Any]:
    """The kinds the tenant's entities have, most used first: reuse one before coining one."""
    return {"kinds": discovery.entity_kinds(principal)}


def external_ref_matched(principal: Principal, data: Any) -> dict[str, Any]:
    """``matched`` only when exactly one entity carries that external ref."""
    valid = validated(ExternalRefInput, data)
    found = discovery.entities_by_external_ref(
        principal, valid["external_ref"].strip(), valid.get("kind") or None
    )
    decision = {0: "none", 1: "matched"}.get(len(found), "ambiguous")
    return {"decision": decision, "candidates": [entity_representation(e) for e in found]}


def entity_created(principal: Principal, valid: dict[str, Any]) -> dict[str, Any]:
    """A new entity (``EntityInput`` already validated), as ``GET /entities/{id}`` shows it."""
    entity = entities.entity_create(
        principal=principal,
        kind=valid["kind"],
        name=valid["name"],
        aliases=valid.get("aliases") or [],
        external_ref=valid.get("external_ref") or "",
    )
    return entity_representation(selectors.access_entity(principal, entity.pk))


def alias_added(principal: Principal, entity_id: str, valid: dict[str, Any]) -> dict[str, Any]:
    """The entity with one more alias (``AliasInput`` validated); a cited source must be
    one the caller may see."""
    entity = selectors.access_entity(principal, entity_id)
    source = None
    if valid.get("source"):
        try:
            source = selectors.access_source(principal, valid["source"])
        except NotFound as exc:
            raise InvalidContent({"source": ["no such source visible to you"]}) from exc
    entities.alias_add(principal=principal, entity=entity, alias=valid["alias"], source=source)
    return entity_representation(selectors.access_entity(principal, entity_id))


def entity_facts(principal: Principal, data: Any) -> Page:
    """Each fact whose subject is the entity or whose value references it, once, in item
    order; facts the caller may not see are left out by the query."""
    valid = validated(EntityFactsInput, data)
    entity = selectors.access_entity(principal, valid["entity_id"])
    facts = selectors.versions_with_details(references.facts_about(principal, entity))
    limit = valid["limit"]
    after = ""
    if valid.get("cursor"):
        listed, after = (str(part) for part in ENTITY_FACTS_CURSOR.decode(valid["cursor"]))
        if listed != entity.pk:  # another entity's list gave it out
            raise InvalidContent({"cursor": [NOT_GIVEN_OUT]})
    page = list(facts.filter(item_id__gt=after).order_by("item_id")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return Page(
        results=[
            {
                **memory_representation(v, principal),
                "relation": "subject" if v.subject_id == entity.pk else "referenced",
            }
            for v in page
        ],
        next_cursor=ENTITY_FACTS_CURSOR.encode([entity.pk, page[-1].item_id]) if more else None,
    )
