"""The MCP tools of the agents' read side (issue 35): search, the caller's own proposals,
entities (create, alias, kinds, external ref). Each calls the ``agent_interface`` function its
REST view calls (api.discovery, api.memory)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rest_framework import serializers

from agent_interface import answers, discovery
from agent_interface.serializers import AliasInput, EntityInput, StrictInput
from agent_mcp.spec import ToolSpec
from core.kinds import MemoryKind
from core.principals import Principal
from memory.models import Status


class _EntityTarget(StrictInput):
    entity_id = serializers.CharField(max_length=40)


def _page(page: discovery.Page) -> dict[str, Any]:
    body = asdict(page)
    return {"results": body["results"], "next_cursor": body["next_cursor"]}


def _search(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    page = discovery.searched(principal, args)
    return {**_page(page), "match": page.match}


def _list_my_proposals(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return _page(discovery.my_proposals(principal, args))


def _list_entity_facts(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return _page(discovery.entity_facts(principal, args))


def _create_entity(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return discovery.entity_created(principal, answers.validated(EntityInput, args))


def _add_alias(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    target = answers.validated(_EntityTarget, {"entity_id": args.get("entity_id")})
    body = {k: v for k, v in args.items() if k != "entity_id"}
    return discovery.alias_added(
        principal, target["entity_id"], answers.validated(AliasInput, body)
    )


def _list_entity_kinds(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    answers.validated(StrictInput, args)  # takes no arguments
    return discovery.entity_kinds(principal)


def _match_external_ref(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return discovery.external_ref_matched(principal, args)


_CURSOR = {
    "type": "string",
    "description": "Optional: 'next_cursor' from the previous page, to read the next one.",
}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": discovery.MAX_LIMIT}

DISCOVERY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="search",
        title="Search what Memgov knows",
        description=(
            "Find entities, facts and sources by words when you do not know the subject id "
            "or the field name ('what do we know about Acme?'). Words must all match; use "
            "\"a phrase\", 'or' and -word as in a web search. When no candidate has every "
            "word, those with some are ranked by the words they have and 'match' is 'some' "
            "instead of 'all': check them before relying on one. Results are CANDIDATES with "
            "'matched' (why) and 'status' — never an answer: to use a fact, call resolve "
            "on its subject, which applies scope, precedence and validity. A memory result "
            "that is not 'active' is not in use. Only what you may see is searched."
        ),
        properties={
            "q": {"type": "string", "minLength": 1, "maxLength": 200},
            "subject": {
                "type": "string",
                "description": "Optional: only facts about this entity (ent_…), as subject "
                "or referenced in a value.",
            },
            "kind": {"type": "string", "enum": list(MemoryKind.values)},
            "status": {
                "type": "string",
                "enum": list(Status.values),
                "description": "Optional: only facts in this status. Default: active and "
                "open proposals.",
            },
            "limit": {**_LIMIT, "description": f"Default {discovery.DEFAULT_LIMIT}."},
            "cursor": _CURSOR,
        },
        required=("q",),
        run=_search,
        writes=False,
    ),
    ToolSpec(
        name="list_entity_facts",
        title="List what is remembered about an entity",
        description=(
            "Every memory item about an entity (ent_…): those whose subject it is "
            "(relation 'subject') and those whose value references it, e.g. a person's "
            "employer fact listed under the company (relation 'referenced'), each once, "
            "with its status. Not an answer to act on: call resolve on the subject for that."
        ),
        properties={
            "entity_id": {"type": "string", "description": "The entity (ent_…)."},
            "limit": {**_LIMIT, "description": f"Default {discovery.DEFAULT_LIMIT}."},
            "cursor": _CURSOR,
        },
        required=("entity_id",),
        run=_list_entity_facts,
        writes=False,
    ),
    ToolSpec(
        name="list_my_proposals",
        title="List my proposals and where each stands",
        description=(
            "The memory versions you proposed, oldest first, with 'status' and 'reasons' "
            "(waiting for approval, held until a subject is linked, rejected and why, checks "
            "failed). Only 'active' ones are in use. Use it instead of proposing again."
        ),
        properties={
            "status": {"type": "string", "enum": list(Status.values)},
            "limit": {**_LIMIT, "description": f"Default {discovery.DEFAULT_LIMIT}."},
            "cursor": _CURSOR,
        },
        required=(),
        run=_list_my_proposals,
        writes=False,
    ),
    ToolSpec(
        name="create_entity",
        title="Create an entity (a person, company, order …)",
        description=(
            "Create the subject memory can be about, when match_entity, match_external_ref "
            "and search found none. Reuse a kind from list_entity_kinds. Give external_ref "
            "when another system has an id for it (CRM id, order number)."
        ),
        properties={
            "kind": {"type": "string", "maxLength": 50, "description": "e.g. person, company"},
            "name": {"type": "string", "maxLength": 200},
            "aliases": {"type": "array", "items": {"type": "string", "maxLength": 200}},
            "external_ref": {"type": "string", "maxLength": 200},
        },
        required=("kind", "name"),
        run=_create_entity,
        writes=True,
    ),
    ToolSpec(
        name="add_alias",
        title="Add another name for an entity",
        description=(
            "Record another name the entity is called by ('Dana', 'ACME Corp'), optionally "
            "citing the source (src_…) where it was said, so match_entity and search find it "
            "by that name. An alias the entity already has is refused (422)."
        ),
        properties={
            "entity_id": {"type": "string", "description": "The entity (ent_…)."},
            "alias": {"type": "string", "maxLength": 200},
            "source": {"type": ["string", "null"], "description": "Optional source id."},
        },
        required=("entity_id", "alias"),
        run=_add_alias,
        writes=True,
    ),
    ToolSpec(
        name="list_entity_kinds",
        title="List the entity kinds in use",
        description=(
            "The kinds of entity this tenant has (person, company, order …), most used "
            "first, with how many entities each has. Call it before create_entity and reuse "
            "a kind that fits rather than coining a near duplicate."
        ),
        properties={},
        required=(),
        run=_list_entity_kinds,
        writes=False,
    ),
    ToolSpec(
        name="match_external_ref",
        title="Find the entity another system's id refers to",
        description=(
            "Turn another system's id (a CRM id, an order number) into an entity id: "
            "'matched' when exactly one entity carries it, 'ambiguous' (never pick one), "
            "'none'."
        ),
        properties={
            "external_ref": {"type": "string", "maxLength": 200},
            "kind": {"type": "string", "description": "Optional entity kind."},
        },
        required=("external_ref",),
        run=_match_external_ref,
        writes=False,
    ),
)
