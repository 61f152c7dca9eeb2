"""The agents' read side over MCP (issue 35): a governed context block to put in a prompt,
the answer to a held proposal's question, and the field catalog. Each calls the one
answer function the matching REST view calls (``agent_interface.context``,
``agent_interface.catalog``)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from agent_interface import catalog, context
from agent_interface.answers import validated
from agent_interface.serializers import StrictInput
from agent_mcp.spec import ToolSpec
from core.principals import Principal


class ClarifyTarget(StrictInput):
    """clarify's member that REST sends in the URL."""

    memory_id = serializers.CharField(max_length=40)


class FieldArguments(StrictInput):
    """describe_field's argument (REST has the name in the URL); none lists the catalog."""

    name = serializers.CharField(max_length=100, required=False)


def build_context(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return context.context_built(principal, args)


def clarify(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    memory_id = validated(ClarifyTarget, {"memory_id": args.get("memory_id")})["memory_id"]
    body = {k: v for k, v in args.items() if k != "memory_id"}
    return context.memory_clarified(principal, memory_id, body).body


def describe_fields(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    """REST's list shape either way (one output schema): one entry, or every entry."""
    name = validated(FieldArguments, args).get("name")
    if name:
        return {"results": [catalog.field_read(principal, name)]}
    return catalog.field_listed(principal)


_SUBJECTS = {
    "type": "array",
    "items": {"type": "string"},
    "minItems": 1,
    "maxItems": 20,
    "description": "Entity ids (ent_…) or names as said.",
}

CONTEXT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="build_context",
        title="Build a governed context block for a prompt",
        description=(
            "Get, in one call, what Memgov lets you rely on about one or more subjects for the "
            "task in front of you, as JSON and as a ready 'text' block to put in your prompt. "
            "Subjects are entity ids (ent_…) or names as said ('Dana'); a name that is "
            "ambiguous or unknown comes back as a question under 'ask' — ask it, never guess. "
            "Set purpose 'action' before doing something (placing, sending, paying): values of "
            "fields whose committed state another system holds come back under 'advisory' with "
            "that system named; read them from it before acting. 'facts' are resolved exactly "
            "as resolve answers (scope, evidence, verification); 'pending' proposals are not "
            "in use yet. The text never exceeds max_tokens, counted exactly in 'encoding'; "
            "an item that does not fit is shortened (fetch it by id) or left out and listed "
            "under 'cut'. Pass task_id so check_task covers what you were told."
        ),
        properties={
            "subjects": _SUBJECTS,
            "context": {
                "type": "object",
                "additionalProperties": {"type": "string", "maxLength": 100},
                "propertyNames": {"maxLength": 32},
                "maxProperties": 32,
                "description": 'The task\'s scope, e.g. {"task": "order-a", "project": "P-9"}.',
            },
            "purpose": {
                "type": "string",
                "enum": ["answer", "action"],
                "description": "'answer' (default) to reply; 'action' before a consequential act.",
            },
            "max_tokens": {
                "type": "integer",
                "minimum": 100,
                "maximum": 32000,
                "description": "Budget of the text block (default 1000), counted in 'encoding'.",
            },
            "encoding": {
                "type": "string",
                "enum": ["cl100k_base", "o200k_base"],
                "description": "The tokenizer max_tokens counts in (default cl100k_base).",
            },
            "fields": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "Optional: only these fields; each gets a fact or a question.",
            },
            "task_id": {"type": "string", "description": "Your task's id, for check_task."},
        },
        required=("subjects",),
        run=build_context,
        writes=False,
    ),
    ToolSpec(
        name="clarify",
        title="Answer a held proposal's question",
        description=(
            "When propose_memory answers with 'needs_clarification' (the subject mention or a "
            "value like 'there' was unclear), ask the user its 'question', then call this with "
            "the chosen option's id (an entity id, or opt_<n> for a value). If no option fits "
            "the subject, create the entity and pass its id. The proposal then goes to review; "
            "it is not used before it is approved and checked."
        ),
        properties={
            "memory_id": {"type": "string", "description": "The held item (mem_…)."},
            "choice": {"type": "string", "description": "The option's id: ent_… or opt_<n>."},
            "member": {
                "type": "string",
                "enum": ["subject", "value"],
                "description": "Which question this answers (default the one asked first).",
            },
        },
        required=("memory_id", "choice"),
        run=clarify,
        writes=True,
    ),
    ToolSpec(
        name="describe_fields",
        title="Read the field catalog",
        description=(
            "Read what the tenant's field catalog says about a field before proposing it: the "
            "JSON Schema its value must match, the kinds and scope dimensions it takes, its "
            "default expiry, and the 'authoritative_system' that holds its committed state "
            "(then memory is only advisory: check that system before acting). Without 'name', "
            "lists every catalogued field."
        ),
        properties={"name": {"type": "string", "description": "A field, e.g. delivery_address."}},
        required=(),
        run=describe_fields,
        writes=False,
    ),
)
