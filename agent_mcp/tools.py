"""The MCP tools: what a model reads (name, description, input schema) and the one answer
function of ``agent_interface.answers`` each calls, the same one the matching REST view calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from agent_interface import answers
from agent_interface.serializers import StrictInput
from agent_mcp.spec import ToolSpec
from core.kinds import MemoryKind
from core.principals import Principal
from memory.models import Assertion, Scenario, Source

_TIME = {"type": "string", "format": "date-time", "description": "RFC 3339 with a zone, e.g. Z"}
_LABELS = {
    "type": "array",
    "items": {"type": "string"},
    "minItems": 1,
    "description": 'Visibility labels; default ["*"] (everyone in the tenant). Can only narrow.',
}
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}


def _without(mapping: Mapping[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k not in names}


class TaskArguments(StrictInput):
    """check_task's arguments (REST has the task id in the URL)."""

    task_id = serializers.CharField(max_length=200)


class MemoryArguments(StrictInput):
    """get_memory's arguments (REST has the memory id in the URL)."""

    memory_id = serializers.CharField(max_length=40)


class CorrectionTarget(StrictInput):
    """correct_memory's members that REST sends in the URL and ``If-Match``; the others
    are the correction's body, validated as REST validates it. Without ``if_match`` the
    answer is REST's 428."""

    memory_id = serializers.CharField(max_length=40)
    if_match = serializers.IntegerField(min_value=1, max_value=999_999_999, required=False)


class IdempotencyArgument(StrictInput):
    """A write's ``idempotency_key`` (REST's ``Idempotency-Key`` header)."""

    idempotency_key = serializers.CharField(max_length=200)


def _resolve(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return answers.resolved(principal, args)


def _check_task(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    task_id = answers.validated(TaskArguments, args)["task_id"]
    return dict(answers.task_checked(principal, task_id))


def _record_source(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return answers.source_recorded(principal, args)


def _propose(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return answers.memory_proposed(principal, args).body


def _correct(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    target_members = tuple(CorrectionTarget().fields)
    target = answers.validated(
        CorrectionTarget, {k: v for k, v in args.items() if k in target_members}
    )
    head = target.get("if_match")
    if_match = None if head is None else f'"{head}"'
    data = _without(args, *target_members)
    return answers.memory_corrected(principal, target["memory_id"], if_match, data).body


def _get_memory(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    memory_id = answers.validated(MemoryArguments, args)["memory_id"]
    return answers.memory_head_answer(principal, memory_id).body


def _match_entity(principal: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return answers.entity_matched(principal, args)


_CONTENT: dict[str, Any] = {
    "value": {"description": "The remembered value: any JSON (string, number, object…), ≤ 8 KiB."},
    "statement": {"type": "string", "description": "The claim in one human-readable sentence."},
    "scope": {
        **_STRING_MAP,
        "description": 'Where it applies, e.g. {"task": "order-a"} or {"project": "P-9"}. '
        "task_fact needs 'task'; enterprise_rule at least one dimension (tenant-wide is "
        'exactly {"tenant": "*"}); preference is {} or names only \'task\'.',
    },
    "owner": {"type": "string", "description": "Username of the person who maintains it."},
    "expires_at": {
        "type": ["string", "null"],
        "format": "date-time",
        "description": "When it stops being used (in the future). Required; null only for a "
        "preference.",
    },
    "valid_from": {
        **_TIME,
        "type": ["string", "null"],
        "description": "When it became true in the world, if known (never guess).",
    },
    "valid_to": {
        **_TIME,
        "type": ["string", "null"],
        "description": "When it stops being true in the world, if known.",
    },
    "assertion": {
        "type": "string",
        "enum": list(Assertion.values),
        "description": "'state' (true now) or 'plan' (intended, e.g. 'joining Nova next "
        "month'): plans are never returned as facts.",
    },
    "sources": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Ids (src_…) from record_source. task_fact and enterprise_rule must cite "
        "a business_record or approval_record.",
    },
    "basis": {
        "type": "object",
        "description": 'The record it rests on, e.g. {"ref": "ORD-A", "version": "2"}.',
    },
    "visibility": _LABELS,
    "required_reviewers": {
        "type": "array",
        "items": {"type": "string"},
        "description": "enterprise_rule only: usernames who must decide.",
    },
    "scenarios": {
        "type": "array",
        "description": "Optional cases the checks must pass before the item is used.",
        "items": {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": list(Scenario.Kind.values)},
                "context": _STRING_MAP,
                "valid_at": {**_TIME, "type": ["string", "null"]},
                "expect": {"type": "string", "enum": list(Scenario.Expect.values)},
            },
            "required": ["kind", "expect"],
        },
    },
}

_PENDING = (
    " The answer's 'status' says where it is: 'pending_review' (a person must approve it), "
    "'checking' (scenario checks are running), 'held_unresolved' (a reviewer must link the "
    "subject). Until it is 'active' it is NOT used: resolve does not return it, so do not act "
    "on it as if it were remembered."
)

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="resolve",
        title="Resolve governed memory for a task",
        description=(
            "Ask which remembered facts apply to a subject (an entity id, ent_…) in the "
            "context of the task in front of you. Call it BEFORE acting on anything you think "
            "you remember about the subject, and pass task_id so the answer is recorded for "
            "check_task. Use only what comes back in 'facts' (each with its evidence and the "
            "reason it won). An entry in 'abstentions' means Memgov will not answer that "
            "field: 'conflict' (two applicable facts disagree), 'not_valid_at_time' or "
            "'no_applicable_fact' — do not guess: ask the user or a person. 'plans' are "
            "intentions, not facts. Pending or unapproved proposals are never returned."
        ),
        properties={
            "subject": {"type": "string", "description": "Entity id (ent_…); see match_entity."},
            "context": {
                **_STRING_MAP,
                "description": 'The task\'s scope, e.g. {"task": "order-a", "project": "P-9"}.',
            },
            "fields": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "Optional: only these fields (each gets a fact or an "
                "abstention). Default: every field of the subject.",
            },
            "valid_at": {
                **_TIME,
                "description": "Optional: the world time asked about (default now).",
            },
            "known_at": {
                **_TIME,
                "description": "Optional: answer as Memgov knew it then (default now).",
            },
            "task_id": {
                "type": "string",
                "description": "Your task's id: records what you "
                "were told, so check_task can warn you later.",
            },
            "explain": {
                "type": "boolean",
                "description": "Also list every candidate considered and why it lost.",
            },
        },
        required=("subject",),
        run=_resolve,
        writes=False,
    ),
    ToolSpec(
        name="check_task",
        title="Check a task before a consequential action",
        description=(
            "Call it right BEFORE a consequential action (placing an order, sending, paying) "
            "for a task whose memory you resolved with task_id. If 'needs_reverification' is "
            "true, something you were told has since been retired, expired or superseded "
            "('reasons' says which): resolve again and act on the new answer, or ask a "
            "person. A task that never resolved is not found."
        ),
        properties={"task_id": {"type": "string", "description": "The task_id you gave resolve."}},
        required=("task_id",),
        run=_check_task,
        writes=False,
    ),
    ToolSpec(
        name="record_source",
        title="Record a source (what was said or recorded)",
        description=(
            "Record the evidence before proposing memory: a user's message, a business record "
            "(an order), an approval record, a document. Sources are immutable; cite the "
            "returned id (src_…) in propose_memory or correct_memory."
        ),
        properties={
            "kind": {"type": "string", "enum": list(Source.Kind.values)},
            "content": {
                "type": "string",
                "maxLength": 32768,
                "description": "The text as said or recorded.",
            },
            "external_ref": {
                "type": "string",
                "description": "The record's own id, e.g. ORD-A or APR-2291.",
            },
            "version": {"type": "string", "description": "The record's own version, e.g. 3."},
            "speaker": {"type": "string"},
            "occurred_at": {**_TIME, "type": ["string", "null"]},
            "visibility": _LABELS,
            "metadata": {"type": "object"},
        },
        required=("kind", "content"),
        run=_record_source,
        writes=True,
    ),
    ToolSpec(
        name="propose_memory",
        title="Propose a new memory item",
        description=(
            "Propose something worth remembering (usually what a user told or corrected), as "
            "version 1 of a new item. Give scope, owner and expires_at explicitly: a missing "
            "one is refused, never defaulted. Kinds: 'preference' (the person's own, checked "
            "but not reviewed), 'task_fact' (one task; needs a business or approval record and "
            "one reviewer), 'enterprise_rule' (needs an approval record and reviewers)."
            + _PENDING
            + " To change an existing item use correct_memory, not a new proposal."
        ),
        properties={
            "kind": {"type": "string", "enum": list(MemoryKind.values)},
            "subject": {"type": "string", "description": "Entity id (ent_…) from match_entity."},
            "subject_mention": {
                "type": "string",
                "description": "Instead of subject, when "
                "match_entity was 'ambiguous' or 'none': the name as said.",
            },
            "field": {"type": "string", "description": "What it is about, e.g. delivery_address."},
            **_CONTENT,
            "value_mention": {
                "type": "string",
                "description": "Instead of value, when the user pointed rather than said "
                "('send it there'): the words as said. The answer's 'needs_clarification' "
                "asks which value is meant (answer it with clarify). A value that is only "
                "'there', 'it' or 'the usual' is treated the same way, unless the field "
                "catalog's value_schema makes it literal or value_is_literal is true.",
            },
            "value_is_literal": {
                "type": "boolean",
                "description": "true when value is meant as said although it reads like a "
                "pointer ('it', the ISO code for Italian; 'The Usual', a band): it is stored "
                "as given, no question asked. Not with value_mention.",
            },
            "value_options": {
                "type": "array",
                "description": "With value_mention: the values you think may be meant, beside "
                "the ones Memgov holds for the subject and field.",
                "items": {
                    "type": "object",
                    "properties": {"label": {"type": "string"}, "value": {}},
                    "required": ["value"],
                    "additionalProperties": False,
                },
            },
        },
        # value may give way to value_mention; expires_at to the field catalog's default.
        required=("kind", "field", "statement", "scope", "owner"),
        run=_propose,
        writes=True,
    ),
    ToolSpec(
        name="correct_memory",
        title="Correct a memory item (new version)",
        description=(
            "Propose a new version of an existing item, e.g. the user corrected it or the "
            "record changed. Pass if_match = the 'version' you read (get_memory); if someone "
            "changed the item since, you get a 409 with 'current_version': read it again and "
            "decide. Omitted fields are copied from the head version; kind, subject and field "
            "are fixed. The active version stays in use until the correction is approved and "
            "checked (resolve shows pending_correction: true)." + _PENDING
        ),
        properties={
            "memory_id": {"type": "string", "description": "The item (mem_…)."},
            "if_match": {
                "type": "integer",
                "minimum": 1,
                "description": "The head version you read.",
            },
            **_CONTENT,
        },
        required=("memory_id", "if_match"),
        run=_correct,
        writes=True,
    ),
    ToolSpec(
        name="get_memory",
        title="Read a memory item",
        description=(
            "Read an item's head version: value, scope, status, approvals, check results and "
            "'version' (what correct_memory's if_match needs). A status other than 'active' "
            "means the item is not used by resolve. Another tenant's or an invisible item is "
            "not found."
        ),
        properties={"memory_id": {"type": "string", "description": "The item (mem_…)."}},
        required=("memory_id",),
        run=_get_memory,
        writes=False,
    ),
    ToolSpec(
        name="match_entity",
        title="Find the entity a name refers to",
        description=(
            "Turn a name as said ('Dana', 'Renewal purchasing') into an entity id. "
            "'matched': exactly one entity has that name or alias, use its id. 'ambiguous': "
            "several do, or only part of a name or alias matches (matched_on says how) — "
            "never pick one; ask, or propose with subject_mention. 'none': no such entity."
        ),
        properties={
            "name": {"type": "string"},
            "kind": {"type": "string", "description": "Optional entity kind, e.g. person."},
        },
        required=("name",),
        run=_match_entity,
        writes=False,
    ),
)

# The read side's tools (issue 35) live in their own modules (ToolSpec: agent_mcp.spec).
from agent_mcp.context_tools import CONTEXT_TOOLS  # noqa: E402
from agent_mcp.discovery_tools import DISCOVERY_TOOLS  # noqa: E402

TOOLS = (*TOOLS, *DISCOVERY_TOOLS, *CONTEXT_TOOLS)
BY_NAME = {tool.name: tool for tool in TOOLS}
