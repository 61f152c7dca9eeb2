"""Issue 33, points 1 and 12, over MCP: a tool's arguments pass the same input boundary as
a REST body. A mistyped or unknown argument, one of the wrong type, or text PostgreSQL
cannot store (NUL) is the REST API's 422 problem as an ``isError`` result, and nothing is
written or answered."""

from __future__ import annotations

from typing import Any

import pytest

from memory import entities
from tests.api.support import Written, preference_body
from tests.conftest import World, iso, later
from tests.mcp.support import InProcess, answer, problem


@pytest.fixture
def dana(world: World) -> str:
    entity = entities.entity_create(
        principal=world.principal("agent"), kind="person", name="Dana", aliases=[], external_ref=""
    )
    return str(entity.pk)


@pytest.fixture
def agent(world: World) -> InProcess:
    return InProcess(world.keys["agent"])


def _preference(agent: InProcess, subject: str) -> dict[str, Any]:
    chat = answer(agent.call("record_source", {"kind": "message", "content": "At home, please."}))
    return dict(answer(agent.call("propose_memory", preference_body(subject, chat["id"]))))


def test_resolve_with_a_mistyped_context_is_refused_not_answered_without_the_task(agent, dana):
    """The issue's reproduction: ``contxt`` answered without the task scope, isError false."""
    refused = problem(agent.call("resolve", {"subject": dana, "contxt": {"task": "order-a"}}), 422)

    assert list(refused["errors"]) == ["contxt"]
    assert "context" in refused["errors"]["contxt"][0]


@pytest.mark.parametrize(
    ("arguments", "member"),
    [
        ({"context": {"task": 5}}, "context.task"),
        ({"fields": "delivery_address"}, "fields"),
        ({"explain": "true"}, "explain"),
        ({"task_id": 17}, "task_id"),
        ({"idempotency_key": "k-1"}, "idempotency_key"),  # resolve is a read: no key
    ],
)
def test_a_resolve_argument_of_the_wrong_type_or_name_is_a_422_as_over_rest(
    world, agent, dana, arguments: dict[str, Any], member: str
):
    body = {"subject": dana, **arguments}

    by_tool = problem(agent.call("resolve", body), 422)
    by_rest = world.client("agent").post("/api/v1/resolve", body, "json").json()

    assert member in by_tool["errors"]
    assert by_tool == by_rest


@pytest.mark.parametrize(
    ("tool", "arguments", "member"),
    [
        ("check_task", {"task_id": "t-1", "verbose": True}, "verbose"),
        ("check_task", {"task_id": 5}, "task_id"),
        ("get_memory", {"memory_id": ["mem_x"]}, "memory_id"),
        ("get_memory", {"memory": "mem_x"}, "memory"),
        ("match_entity", {"name": "Dana", "knd": "person"}, "knd"),
        ("record_source", {"kind": "message", "content": "hi", "speakr": "Dana"}, "speakr"),
        (
            "record_source",
            {"kind": "message", "content": "hi", "idempotency_key": 7},
            "idempotency_key",
        ),
    ],
)
def test_every_tool_refuses_an_unknown_or_mistyped_argument(
    agent, tool: str, arguments: dict[str, Any], member: str
):
    given = Written.now()

    refused = problem(agent.call(tool, arguments), 422)

    assert member in refused["errors"], refused
    assert Written.now() == given


@pytest.mark.parametrize(
    ("arguments", "member"),
    [
        ({"if_match": "1", "value": "5 Dock Road"}, "if_match"),
        ({"if_match": True, "value": "5 Dock Road"}, "if_match"),
        ({"if_match": 1, "vaule": "5 Dock Road"}, "vaule"),
        ({"if_match": 1, "value": "5 Dock Road", "statment": "Dana moved."}, "statment"),
    ],
)
def test_correct_memory_refuses_a_mistyped_or_wrongly_typed_argument(
    agent, dana, arguments: dict[str, Any], member: str
):
    memory = _preference(agent, dana)
    given = Written.now()

    refused = problem(agent.call("correct_memory", {"memory_id": memory["id"], **arguments}), 422)

    assert member in refused["errors"], refused
    assert Written.now() == given


def test_a_preference_correction_keeping_the_old_statement_is_refused_over_mcp(agent, dana):
    memory = _preference(agent, dana)

    refused = problem(
        agent.call(
            "correct_memory", {"memory_id": memory["id"], "if_match": 1, "value": "5 Dock Road"}
        ),
        422,
    )

    assert list(refused["errors"]) == ["statement"]


# Point 12: PostgreSQL refuses NUL in text and jsonb (a DataError, answered 500 before).
NUL = "a\x00b"


@pytest.mark.parametrize(
    ("tool", "arguments", "member"),
    [
        ("record_source", {"kind": "message", "content": NUL}, "content"),
        ("record_source", {"kind": "message", "content": "hi", "metadata": {NUL: 1}}, "metadata"),
        (
            "record_source",
            {"kind": "message", "content": "hi", "idempotency_key": NUL},
            "idempotency_key",
        ),
        ("check_task", {"task_id": NUL}, "task_id"),
        ("get_memory", {"memory_id": NUL}, "memory_id"),
        ("match_entity", {"name": NUL}, "name"),
        ("resolve", {"subject": NUL}, "subject"),
        ("resolve", {"subject": "ent_x", "context": {"task": NUL}}, "context.task"),
    ],
)
def test_a_nul_in_any_argument_is_the_rest_apis_422_not_a_500(
    agent, tool: str, arguments: dict[str, Any], member: str
):
    given = Written.now()

    refused = problem(agent.call(tool, arguments), 422)

    assert refused["errors"] == {member: ["must not contain NUL characters"]}
    assert Written.now() == given


def test_a_nul_in_a_proposal_is_refused_alike_over_mcp_and_rest(world, agent, dana):
    body = {
        "kind": "preference",
        "subject": dana,
        "field": "delivery_address",
        "value": {"street": NUL},
        "statement": "Dana wants deliveries at home.",
        "scope": {},
        "owner": "nora",
        "expires_at": iso(later(30)),
    }

    by_tool = problem(agent.call("propose_memory", body), 422)
    by_rest = world.client("agent").post("/api/v1/memories", body, "json").json()

    assert by_tool == by_rest
    assert by_tool["errors"] == {"value.street": ["must not contain NUL characters"]}


def test_arguments_nested_deeper_than_a_rest_body_may_be_are_refused(agent):
    deep: Any = {}
    for _ in range(200):
        deep = {"a": deep}

    refused = problem(
        agent.call("record_source", {"kind": "message", "content": "hi", "metadata": deep}), 400
    )

    assert "nested" in refused["detail"]
