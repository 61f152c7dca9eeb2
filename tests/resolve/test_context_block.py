"""The context block (issue 35, seed 002): what an agent may put in a prompt about Dana for
order-a, governed as resolve is — labelled facts, questions instead of guesses, pending
proposals, the order service named for the address, cut to a budget that says what it cut,
and nothing the caller may not see."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts import tenancy
from accounts.grants import permission_grant
from memory import entities
from memory.context import count_tokens
from memory.models import MemoryItem, MemoryVersion
from tests.conftest import World, later
from tests.mcp.support import InProcess, answer, problem
from tests.resolve.conftest import Story

HOME, OFFICE = "12 Elm Street", "4 Dock Road"
ORDER_A = {"task": "order-a"}
ORDER_SERVICE = {"name": "Order service", "url": None, "tool": "orders.get_order"}


def context(client: APIClient, status: int = 200, **body: Any) -> Any:
    response = client.post("/api/v1/context", body, format="json")
    assert response.status_code == status, response.content
    return response.json()


@pytest.fixture
def home(story: Story, dana: str) -> MemoryVersion:
    return story.activate(
        kind="preference",
        subject=dana,
        field="delivery_address",
        value=HOME,
        statement="Dana normally wants deliveries at home.",
        scope={},
        expires_at=None,
        owner="nora",
    )


@pytest.fixture
def office(story: Story, dana: str, home: MemoryVersion) -> MemoryVersion:
    record = story.source("Order order-a: deliver to 4 Dock Road.", "business_record")
    return story.activate(
        kind="task_fact",
        subject=dana,
        field="delivery_address",
        value=OFFICE,
        statement="Order order-a goes to Dana's office.",
        scope=ORDER_A,
        expires_at=later(3),
        sources=[record],
        basis={"ref": "ORD-A", "version": "2"},
    )


@pytest.fixture
def phone(story: Story, dana: str) -> MemoryVersion:
    return story.activate(
        kind="preference",
        subject=dana,
        field="phone",
        value="+1 555 0100",
        statement="Dana's phone is +1 555 0100.",
        scope={},
        expires_at=None,
        owner="nora",
    )


@pytest.fixture
def order_service(world: World) -> None:
    permission_grant(user=world.users["rita"], tenant=world.tenant, codename="tenant_admin")
    response = world.client("rita").put(
        "/api/v1/fields/delivery_address",
        {"authoritative_system": {"name": "Order service", "tool": "orders.get_order"}},
        format="json",
    )
    assert response.status_code == 200, response.content


def test_facts_come_labelled_with_scope_evidence_and_verification(world, dana, office, phone):
    body = context(world.client("agent"), subjects=[dana], context=ORDER_A, purpose="answer")

    assert [(f["field"], f["value"]) for f in body["facts"]] == [
        ("delivery_address", OFFICE),
        ("phone", "+1 555 0100"),
    ]
    address = body["facts"][0]
    assert (address["subject"], address["scope"], address["verification"]) == (
        dana,
        ORDER_A,
        "verified_record",
    )
    assert address["basis"] == {"ref": "ORD-A", "version": "2"}
    assert body["subjects"] == [{"given": dana, "id": dana, "name": "Dana Kim", "decision": "id"}]
    assert body["ask"] == body["advisory"] == body["pending"] == body["cut"] == []
    line = next(line for line in body["text"].splitlines() if "delivery_address" in line)
    assert line.startswith('- [fact] Dana Kim · delivery_address = "4 Dock Road" (task_fact, ')
    assert "scope task=order-a, verified_record, evidence src_" in line
    assert "basis ORD-A v2" in line
    assert body["tokens"]["used"] == count_tokens(body["text"]) <= 1000
    assert body["tokens"]["encoding"] == "cl100k_base"
    assert "exact" in body["tokens"]["estimator"]


def test_an_order_address_is_advisory_for_an_action_with_the_order_service_named(
    world, dana, office, order_service
):
    agent = world.client("agent")

    acting = context(agent, subjects=[dana], context=ORDER_A, purpose="action")
    answering = context(agent, subjects=[dana], context=ORDER_A, purpose="answer")
    over_mcp = answer(
        InProcess(world.keys["agent"]).call(
            "build_context", {"subjects": [dana], "context": ORDER_A, "purpose": "action"}
        )
    )

    assert acting["facts"] == []  # never presented as the committed state
    advisory = acting["advisory"][0]
    assert (advisory["value"], advisory["committed"], advisory["authoritative_system"]) == (
        OFFICE,
        False,
        ORDER_SERVICE,
    )
    assert (
        '- [verify first] Dana Kim · delivery_address: do NOT act on memory\'s "4 Dock Road"'
        in (acting["text"])
    )
    assert "read the committed value from Order service, tool orders.get_order" in acting["text"]
    assert "- [fact]" not in acting["text"]
    assert answering["facts"] == [] and answering["advisory"][0]["memory_id"] == office.item_id
    assert "[advisory] Dana Kim · delivery_address: memory says" in answering["text"]
    assert over_mcp["advisory"] == acting["advisory"] and over_mcp["text"] == acting["text"]


def test_a_block_cut_to_its_budget_says_what_was_cut(world, story, dana, office, phone):
    for n in range(8):
        story.activate(
            kind="preference",
            subject=dana,
            field=f"note_{n}",
            value=f"note number {n} about how Dana likes things done",
            scope={},
            expires_at=None,
            owner="nora",
        )
    agent = world.client("agent")
    full = context(agent, subjects=[dana], context=ORDER_A, max_tokens=4000)

    small = context(agent, subjects=[dana], context=ORDER_A, max_tokens=400)

    assert len(full["facts"]) == 10 and full["cut"] == []
    assert small["tokens"]["used"] <= 400 < full["tokens"]["used"]
    kept = [f["field"] for f in small["facts"]]
    assert len(kept) >= 2
    assert kept[0] == "delivery_address"  # the task-scoped fact ranks first
    ranked = [f["field"] for f in full["facts"]]
    assert kept == [f for f in ranked if f in kept]  # in rank order; cut ones leave gaps only
    assert sorted([*kept, *(c["field"] for c in small["cut"])]) == sorted(ranked)
    assert small["cut"][0]["section"] == "facts" and small["cut"][0]["memory_id"].startswith("mem_")
    assert (
        small["text"]
        .splitlines()[-1]
        .startswith(f"[cut to fit 400 tokens: {len(small['cut'])} facts left out")
    )


def test_a_restricted_fact_never_appears_in_a_context_block(world, story, dana, refund_account):
    finance_agent = tenancy.api_key_create(
        tenant=world.tenant, agent_name="finance-bot", labels=["staff", "finance"]
    )[1]
    staff = context(world.client("agent"), subjects=[dana, "Dana Kim"], fields=["refund_account"])
    finance = InProcess(finance_agent)

    told = answer(finance.call("build_context", {"subjects": [dana]}))
    assert [f["value"] for f in told["facts"]] == ["DE89 3704"]
    assert staff["facts"] == [] and staff["pending"] == []
    assert "DE89" not in staff["text"] and refund_account.item_id not in str(staff)
    assert [a["reason"] for a in staff["ask"]] == ["no_applicable_fact"]
    assert staff["ask"][0]["ask"].startswith("What is Dana Kim's refund_account here?")


def test_a_name_that_is_ambiguous_comes_back_as_the_question_to_ask(world, story, dana, home):
    story.entity("Dana Whitfield", "customer")

    body = context(world.client("agent"), subjects=["Dana"], context=ORDER_A)

    question = body["ask"][0]
    assert question["reason"] == "ambiguous_subject"
    assert {o["label"] for o in question["options"]} == {
        "Dana Kim (customer)",
        "Dana Whitfield (customer)",
    }
    assert question["ask"].startswith("Which 'Dana' do you mean: ")
    assert body["facts"] == [] and body["subjects"][0]["decision"] == "ambiguous"
    exact = context(world.client("agent"), subjects=["Dana Kim"], context=ORDER_A)
    assert exact["subjects"][0]["decision"] == "matched" and exact["facts"][0]["value"] == HOME


def test_a_pending_correction_that_would_change_the_answer_is_shown_not_used(
    world, story, dana, home
):
    pending = story.propose(
        kind="task_fact",
        subject=dana,
        field="delivery_address",
        value="9 Quay Street",
        scope=ORDER_A,
        expires_at=later(2),
        statement="Order order-a now goes to 9 Quay Street.",
    )

    body = context(world.client("agent"), subjects=[dana], context=ORDER_A)

    assert [f["value"] for f in body["facts"]] == [HOME]
    assert body["pending"] == [
        {
            "subject": dana,
            "field": "delivery_address",
            "memory_id": pending.item_id,
            "version": 1,
            "status": "pending_review",
            "statement": "Order order-a now goes to 9 Quay Street.",
            "effect": "may_replace",
            "replaces": home.item_id,
        }
    ]
    elsewhere = context(world.client("agent"), subjects=[dana], context={"task": "order-b"})
    assert elsewhere["pending"] == []  # it would not apply to order-b


def test_a_block_with_a_task_id_is_what_check_task_watches(world, dana, office):
    agent = world.client("agent")
    body = context(agent, subjects=[dana], context=ORDER_A, task_id="dispatch-a")
    assert body["retrieval_id"].startswith("rtv_")

    world.client("rita").post(
        f"/api/v1/memories/{office.item_id}/retire", {"reason": "order cancelled"}, format="json"
    )

    task = agent.get("/api/v1/tasks/dispatch-a").json()
    assert [u["memory_id"] for u in task["used"]] == [office.item_id]
    assert task["needs_reverification"] is True


def test_bad_requests_are_refused_as_resolve_refuses_them(world, dana):
    agent = world.client("agent")

    typo = context(agent, 422, subjets=[dana])
    assert "did you mean 'subjects'?" in typo["errors"]["subjets"][0]
    assert "purpose" in context(agent, 422, subjects=[dana], purpose="act")["errors"]
    assert "max_tokens" in context(agent, 422, subjects=[dana], max_tokens=10)["errors"]
    assert context(agent, 404, subjects=["ent_nobody"])["status"] == 404
    assert context(world.client("zed"), 404, subjects=[dana])["status"] == 404
    problem(InProcess(world.keys["agent"]).call("build_context", {"subjects": []}), 422)


def test_an_entity_created_by_the_service_is_found_by_its_exact_name(world, story):
    entity = entities.entity_create(
        principal=world.principal("agent"), kind="customer", name="Quiet Customer"
    )

    body = context(world.client("agent"), subjects=["quiet customer"])

    assert body["subjects"][0]["id"] == entity.pk
    assert body["facts"] == [] and body["policy_version"] == "1"
    assert MemoryItem.objects.count() == 0
