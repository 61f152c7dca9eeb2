"""The MCP tools on the test database, through the SDK's client connected in-process:
the same answers, permissions, tenant isolation, throttling and idempotency as the REST
API, because both call the same functions (``agent_interface.answers``)."""

from __future__ import annotations

from typing import Any

import pytest

from accounts import tenancy
from agent_interface.auth import PrincipalRateThrottle
from agent_interface.serializers import (
    CorrectionInput,
    MatchInput,
    ProposalInput,
    ResolveInput,
    SourceInput,
)
from agent_mcp.tools import BY_NAME, TOOLS, MemoryArguments, TaskArguments
from audit.models import AuditEvent
from core.models import ApiKey
from memory import entities
from memory.models import Source
from tests.api.test_throttling import _forget as forget_bucket
from tests.conftest import World, iso, later
from tests.mcp.support import TOOL_NAMES, InProcess, answer, problem

ORDER_A = {"task": "order-a"}


@pytest.fixture
def dana(world: World) -> str:
    entity = entities.entity_create(
        principal=world.principal("agent"), kind="person", name="Dana", aliases=[], external_ref=""
    )
    return str(entity.pk)


def office_proposal(agent: InProcess, subject: str, address: str = "4 Dock Road") -> Any:
    record = answer(
        agent.call(
            "record_source",
            {
                "kind": "business_record",
                "content": f"Order order-a: deliver to {address}.",
                "external_ref": "ORD-A",
                "version": "2",
            },
        )
    )
    return answer(
        agent.call(
            "propose_memory",
            {
                "kind": "task_fact",
                "subject": subject,
                "field": "delivery_address",
                "value": address,
                "statement": f"Order order-a goes to {address}.",
                "scope": ORDER_A,
                "owner": "rita",
                "expires_at": iso(later(7)),
                "sources": [record["id"]],
                "basis": {"ref": "ORD-A", "version": "2"},
            },
        )
    )


def test_the_seven_tools_are_listed_with_schemas_written_for_a_model(world):
    assert InProcess(world.keys["agent"]).tool_names() == TOOL_NAMES
    for tool in TOOLS:
        schema = tool.input_schema()
        assert schema["type"] == "object" and set(schema["required"]) <= set(schema["properties"])
        assert len(tool.description) > 150, tool.name
    assert "abstention" in BY_NAME["resolve"].description
    for name in ("propose_memory", "correct_memory"):
        assert "pending_review" in BY_NAME[name].description
        assert "NOT used" in BY_NAME[name].description
    assert "idempotency_key" in BY_NAME["propose_memory"].input_schema()["properties"]
    assert "idempotency_key" not in BY_NAME["resolve"].input_schema()["properties"]


@pytest.mark.parametrize(
    ("tool", "serializer", "surface_only"),
    [
        ("resolve", ResolveInput, set()),
        ("record_source", SourceInput, {"idempotency_key"}),
        ("propose_memory", ProposalInput, {"idempotency_key"}),
        ("correct_memory", CorrectionInput, {"idempotency_key", "memory_id", "if_match"}),
        ("match_entity", MatchInput, set()),
        ("check_task", TaskArguments, set()),
        ("get_memory", MemoryArguments, set()),
    ],
)
def test_each_tool_takes_the_fields_of_its_rest_operation(tool, serializer, surface_only):
    """The schema a model reads cannot drift from what the shared validation accepts."""
    properties = set(BY_NAME[tool].input_schema()["properties"])
    fields = set(serializer().fields)
    lineage = {"kind", "subject", "subject_mention", "field"}
    lineage_fixed = lineage if tool == "correct_memory" else set()

    assert properties - surface_only == fields - lineage_fixed


def test_get_memory_match_and_resolve_answer_exactly_as_rest(world, dana):
    agent = InProcess(world.keys["agent"])
    proposed = office_proposal(agent, dana)
    rest = world.client("agent")

    memory = answer(agent.call("get_memory", {"memory_id": proposed["id"]}))
    assert memory == proposed
    assert memory == rest.get(f"/api/v1/memories/{proposed['id']}").json()
    match = answer(agent.call("match_entity", {"name": "dana"}))
    assert match == rest.post("/api/v1/entities/match", {"name": "dana"}, format="json").json()
    assert match == {
        "decision": "matched",
        "candidates": [{"id": dana, "kind": "person", "name": "Dana", "matched_on": "name"}],
    }
    body = {"subject": dana, "context": ORDER_A, "fields": ["delivery_address"]}
    by_tool = answer(agent.call("resolve", body))
    by_rest = rest.post("/api/v1/resolve", body, format="json").json()
    for answered in (by_tool, by_rest):
        answered.pop("valid_at"), answered.pop("known_at")
    assert by_tool == by_rest


def test_an_agents_proposal_stays_pending_and_is_not_used(world, dana):
    agent = InProcess(world.keys["agent"])

    proposed = office_proposal(agent, dana)

    assert (proposed["status"], proposed["active_version"]) == ("pending_review", None)
    assert proposed["proposed_by"] == "agent:bot"
    told = answer(
        agent.call("resolve", {"subject": dana, "context": ORDER_A, "fields": ["delivery_address"]})
    )
    assert told["facts"] == []
    assert [a["reason"] for a in told["abstentions"]] == ["no_applicable_fact"]


def test_an_agent_key_cannot_approve_through_any_tool(world, dana):
    agent = InProcess(world.keys["agent"])
    proposed = office_proposal(agent, dana)

    names = agent.tool_names()
    assert not any(word in name for name in names for word in ("approve", "reject", "retire"))
    for verb in ("approve", "reject", "retire", "recheck", "link_subject"):
        problem(agent.call(verb, {"memory_id": proposed["id"]}), 404)
    # A correction is a new proposal: it needs its own review and activates nothing.
    corrected = answer(
        agent.call(
            "correct_memory", {"memory_id": proposed["id"], "if_match": 1, "value": "9 Quay Street"}
        )
    )
    assert (corrected["version"], corrected["status"], corrected["approvals"]) == (
        2,
        "pending_review",
        [],
    )
    # The verification an approval would give cannot be claimed either.
    refused = problem(
        agent.call(
            "correct_memory",
            {"memory_id": proposed["id"], "if_match": 2, "verification": "confirmed"},
        ),
        422,
    )
    assert refused["errors"] == {"verification": ["cannot be set by the caller"]}


def test_another_tenants_key_sees_404s(world, dana):
    proposed = office_proposal(InProcess(world.keys["agent"]), dana)
    InProcess(world.keys["agent"]).call("resolve", {"subject": dana, "task_id": "order-a-run"})
    zed = InProcess(world.keys["zed"])

    problem(zed.call("get_memory", {"memory_id": proposed["id"]}), 404)
    problem(
        zed.call(
            "correct_memory", {"memory_id": proposed["id"], "if_match": 1, "value": "1 Evil Lane"}
        ),
        404,
    )
    problem(zed.call("resolve", {"subject": dana, "context": ORDER_A}), 404)
    problem(zed.call("check_task", {"task_id": "order-a-run"}), 404)
    assert answer(zed.call("match_entity", {"name": "Dana"})) == {
        "decision": "none",
        "candidates": [],
    }
    problem(zed.call("propose_memory", {**_minimal(dana), "sources": proposed["sources"]}), 422)


def test_values_longer_than_their_columns_are_422s_naming_the_member_never_500s(world, dana):
    agent = InProcess(world.keys["agent"])
    source = answer(agent.call("record_source", {"kind": "business_record", "content": "O."}))
    long_scope = {
        **_minimal(dana),
        "owner": "rita",
        "sources": [source["id"]],
        "scope": {"task": "t" * 201},
    }
    given = AuditEvent.objects.count()
    refused = problem(agent.call("propose_memory", long_scope), 422)
    assert list(refused["errors"]) == ["scope.task"]
    named = problem(agent.call("create_entity", {"kind": "person", "name": "ß" * 150}), 422)
    assert list(named["errors"]) == ["name"]
    alias = problem(agent.call("add_alias", {"entity_id": dana, "alias": "ß" * 101}), 422)
    assert list(alias["errors"]) == ["alias"]
    assert AuditEvent.objects.count() == given


def _minimal(subject: str) -> dict[str, Any]:
    return {
        "kind": "task_fact",
        "subject": subject,
        "field": "delivery_address",
        "value": "x",
        "statement": "x",
        "scope": ORDER_A,
        "owner": "zed",
        "expires_at": iso(later(7)),
    }


def test_a_correction_against_a_stale_version_is_a_409_with_the_current_one(world, dana):
    agent = InProcess(world.keys["agent"])
    proposed = office_proposal(agent, dana)
    answer(
        agent.call(
            "correct_memory", {"memory_id": proposed["id"], "if_match": 1, "value": "9 Quay Street"}
        )
    )

    stale = problem(
        agent.call(
            "correct_memory", {"memory_id": proposed["id"], "if_match": 1, "value": "1 Other Road"}
        ),
        409,
    )

    assert stale["current_version"] == 2
    problem(agent.call("correct_memory", {"memory_id": proposed["id"], "value": "x"}), 428)


def test_a_retried_write_with_its_idempotency_key_writes_once(world):
    agent = InProcess(world.keys["agent"])
    body = {
        "kind": "message",
        "content": "Dana: send order A to my office.",
        "idempotency_key": "f6c1-retry",
    }

    first = answer(agent.call("record_source", body))
    again = answer(agent.call("record_source", body))
    other = problem(agent.call("record_source", {**body, "content": "something else"}), 422)

    assert again == first
    assert Source.objects.filter(tenant=world.tenant).count() == 1
    assert other["errors"] == {"Idempotency-Key": ["was already used with a different request"]}


def test_a_tool_write_is_audited_with_the_agent_as_actor(world):
    source = answer(
        InProcess(world.keys["agent"]).call(
            "record_source", {"kind": "message", "content": "Dana prefers tables."}
        )
    )

    event = AuditEvent.objects.get(target_id=source["id"])
    assert (event.actor, event.action) == ("agent:bot", "source.recorded")


def test_tool_calls_share_the_keys_rest_throttle(world, monkeypatch):
    monkeypatch.setattr(PrincipalRateThrottle, "THROTTLE_RATES", {"principal": "3/min"})
    for name in ("agent", "rita"):
        forget_bucket(world.keys[name])
    agent = InProcess(world.keys["agent"])

    for _ in range(2):
        answer(agent.call("match_entity", {"name": "Dana"}))
    assert (
        world.client("agent")
        .post("/api/v1/entities/match", {"name": "Dana"}, format="json")
        .status_code
        == 200
    )
    throttled = problem(agent.call("match_entity", {"name": "Dana"}), 429)

    assert 0 < throttled["retry_after"] <= 60
    # Another key of the tenant is not slowed down.
    answer(InProcess(world.keys["rita"]).call("match_entity", {"name": "Dana"}))


def test_a_key_revoked_mid_session_stops_working_on_the_next_call(world):
    agent = InProcess(world.keys["agent"])
    answer(agent.call("match_entity", {"name": "Dana"}))

    tenancy.api_key_revoke(key=ApiKey.objects.get(prefix=world.keys["agent"].split("_")[1]))

    refused = problem(agent.call("match_entity", {"name": "Dana"}), 401)
    assert refused["detail"] == "Unknown or revoked API key."
