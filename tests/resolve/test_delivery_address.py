"""Seed 002: the customer's home preference, the office instruction for one order, and what
the agent is told when that instruction lapses or is retired mid-task."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory import proposals
from memory.models import MemoryItem, MemoryVersion
from tests.conftest import iso, later
from tests.resolve.conftest import Story, outcomes, resolve, winners

HOME = "12 Elm Street"
OFFICE = "4 Dock Road"


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
        scope={"task": "order-a"},
        expires_at=later(1),
        sources=[record],
        basis={"ref": "ORD-A", "version": "2"},
    )


def test_office_instruction_wins_for_order_a_with_its_evidence(world, dana, home, office):
    body = resolve(world.client("agent"), subject=dana, context={"task": "order-a"})

    assert body["policy_version"] == "1"
    assert body["retrieval_id"] is None
    assert body["abstentions"] == []
    assert body["plans"] == []
    assert "considered" not in body
    assert body["facts"] == [
        {
            "field": "delivery_address",
            "value": OFFICE,
            "memory_id": office.item_id,
            "version": 1,
            "kind": "task_fact",
            "scope": {"task": "order-a"},
            "verification": "verified_record",
            "valid_from": None,
            "valid_to": None,
            "expires_at": iso(office.expires_at),
            "sources": office.source_ids,
            "basis": {"ref": "ORD-A", "version": "2"},
            "statement": "Order order-a goes to Dana's office.",
            "pending_correction": False,
            "qualifiers": ["valid_from_unknown"],
            "reason": f"task scope is more specific than the preference ({home.item_id}, unscoped)",
        }
    ]


def test_order_b_still_gets_the_home_preference(world, dana, home, office):
    body = resolve(world.client("agent"), subject=dana, context={"task": "order-b"}, explain=True)

    assert winners(body) == {"delivery_address": HOME}
    assert body["facts"][0]["memory_id"] == home.item_id
    assert body["facts"][0]["reason"] == "only applicable fact"
    assert outcomes(body) == {home.item_id: "selected", office.item_id: "out_of_scope"}


def test_after_the_instruction_expires_order_a_falls_back_to_home(world, dana, home, office):
    assert office.expires_at is not None
    just_before = office.expires_at - timedelta(seconds=1)
    just_after = office.expires_at + timedelta(seconds=1)
    client = world.client("agent")

    before = resolve(client, subject=dana, context={"task": "order-a"}, known_at=iso(just_before))
    after = resolve(
        client, subject=dana, context={"task": "order-a"}, known_at=iso(just_after), explain=True
    )

    assert winners(before) == {"delivery_address": OFFICE}
    assert winners(after) == {"delivery_address": HOME}
    assert after["known_at"] == iso(just_after)
    assert outcomes(after) == {home.item_id: "selected", office.item_id: "expired"}


def test_instruction_alone_after_expiry_abstains_and_says_it_expired(world, story, dana):
    record = story.source("Order order-c: deliver to the depot.", "business_record")
    depot = story.activate(
        kind="task_fact",
        subject=dana,
        field="delivery_address",
        value="Depot 3",
        scope={"task": "order-c"},
        expires_at=later(1),
        sources=[record],
    )
    assert depot.expires_at is not None

    body = resolve(
        world.client("agent"),
        subject=dana,
        fields=["delivery_address"],
        context={"task": "order-c"},
        known_at=iso(depot.expires_at + timedelta(seconds=1)),
    )

    assert body["facts"] == []
    assert body["abstentions"] == [
        {
            "field": "delivery_address",
            "reason": "no_applicable_fact",
            "detail": "the memory for delivery_address has expired",
        }
    ]


def test_resolve_with_task_id_is_recorded_and_shown_by_the_task(world, dana, home, office):
    client = world.client("agent")

    body = resolve(client, subject=dana, context={"task": "order-a"}, task_id="dispatch-order-a")
    task = client.get("/api/v1/tasks/dispatch-order-a")

    assert body["retrieval_id"].startswith("rtv_")
    assert task.status_code == 200
    record = task.json()
    assert record["task_id"] == "dispatch-order-a"
    assert record["needs_reverification"] is False
    assert record["reasons"] == []
    [used] = record["used"]
    assert (used["memory_id"], used["version"], used["field"], used["status_now"]) == (
        office.item_id,
        1,
        "delivery_address",
        "active",
    )
    assert used["retrieval_id"] == body["retrieval_id"]
    assert used["retrieved_at"].endswith("Z")


def test_retiring_the_instruction_flags_the_task_that_used_it(world, story, dana, home, office):
    agent = world.client("agent")
    resolve(agent, subject=dana, context={"task": "order-a"}, task_id="dispatch-order-a")

    with story.on_commit(execute=True):  # what commit runs: the cache invalidation
        retired = world.client("rita").post(
            f"/api/v1/memories/{office.item_id}/retire",
            {"reason": "customer cancelled the office delivery"},
            format="json",
        )
    task = agent.get("/api/v1/tasks/dispatch-order-a").json()
    now = resolve(agent, subject=dana, context={"task": "order-a"})

    assert retired.status_code == 200, retired.content
    assert retired.json()["flagged_tasks"] == ["dispatch-order-a"]
    assert task["needs_reverification"] is True
    assert [u["status_now"] for u in task["used"]] == ["retired"]
    [reason] = task["reasons"]
    assert (reason["memory_id"], reason["version"], reason["event"], reason["reason"]) == (
        office.item_id,
        1,
        "retired",
        "customer cancelled the office delivery",
    )
    assert winners(now) == {"delivery_address": HOME}


def test_task_told_nothing_still_has_a_record(world, dana):
    client = world.client("agent")

    body = resolve(client, subject=dana, fields=["delivery_address"], task_id="dispatch-order-z")
    task = client.get("/api/v1/tasks/dispatch-order-z")

    assert body["facts"] == []
    assert body["retrieval_id"].startswith("rtv_")
    assert task.status_code == 200, task.content
    assert task.json() == {
        "task_id": "dispatch-order-z",
        "used": [],
        "needs_reverification": False,
        "reasons": [],
    }


def test_task_record_is_not_visible_to_another_tenant(world, dana, home, office):
    resolve(world.client("agent"), subject=dana, context={"task": "order-a"}, task_id="t-1")

    mine = world.client("rita").get("/api/v1/tasks/t-1")
    theirs = world.client("zed").get("/api/v1/tasks/t-1")

    assert mine.status_code == 200
    assert theirs.status_code == 404
    assert theirs["Content-Type"] == "application/problem+json"


def test_unknown_task_is_404(world):
    response = world.client("agent").get("/api/v1/tasks/never-resolved")

    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"


def test_office_instruction_in_use_while_its_correction_waits_for_review(
    world, story, dana, home, office
):
    item = MemoryItem.objects.get(pk=office.item_id)
    with story.on_commit(execute=True):
        correction = proposals.memory_correct(
            principal=world.principal("agent"),
            item=item,
            if_match='"1"',
            data={"value": "5 Dock Road", "statement": "Order order-a goes to the new office."},
        )
    client = world.client("agent")

    waiting = resolve(client, subject=dana, context={"task": "order-a"})
    story.approve(correction, "rita")
    corrected = resolve(client, subject=dana, context={"task": "order-a"})

    [fact] = waiting["facts"]
    assert (fact["value"], fact["version"], fact["pending_correction"]) == (OFFICE, 1, True)
    assert fact["qualifiers"] == ["valid_from_unknown", "pending_correction"]
    [fact] = corrected["facts"]
    assert (fact["value"], fact["version"], fact["pending_correction"]) == ("5 Dock Road", 2, False)
