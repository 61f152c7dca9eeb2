"""What a reader may see, on the read side agents and reviewers use (issue 42, points 1-3):
an option copied from a memory, a proposal one made, a list of a subject's facts — each
shown as the *reader* may see it now, filtered by the database, never by who asked first."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts import tenancy
from audit.models import AuditEvent
from core.models import ApiKey
from core.principals import Principal
from memory.models import MemoryVersion, Status
from tests.api.support import record_source
from tests.conftest import World, iso, later
from tests.mcp.support import InProcess, answer
from tests.resolve.conftest import Story

CREDIT = {"amount": 50000, "currency": "EUR"}


@pytest.fixture
def finance(world: World) -> Principal:
    """An agent of the finance team: it sees what is labelled finance (and staff)."""
    world.keys["finance"] = tenancy.api_key_create(
        tenant=world.tenant, agent_name="ledger", labels=["finance", "staff"]
    )[1]
    return Principal(tenant=world.tenant, name="agent:ledger", labels=frozenset({"finance"}))


@pytest.fixture
def northwind(story: Story) -> str:
    return story.entity("Northwind Traders", kind="company")


@pytest.fixture
def credit_limit(story: Story, finance: Principal, northwind: str) -> str:
    """Northwind's credit limit, in use and visible to finance only."""
    version = story.activate(
        kind="task_fact",
        subject=northwind,
        field="credit_limit",
        value=CREDIT,
        statement="Northwind's credit limit is 50000 EUR.",
        scope={"task": "q3-review"},
        expires_at=later(30),
        visibility=["finance"],
        by=finance,
    )
    return version.item_id


def the_same_as_before(world: World, northwind: str) -> dict[str, Any]:
    source = record_source(
        world.client("finance"), "business_record", "Q4: keep Northwind's limit as it was."
    )
    return {
        "kind": "task_fact",
        "subject": northwind,
        "field": "credit_limit",
        "value_mention": "the same as before",
        "statement": "Northwind's Q4 credit limit stays as it was.",
        "scope": {"task": "q4-review"},
        "owner": "rita",
        "expires_at": iso(later(7)),
        "sources": [source],
    }


def held_by_finance(world: World, northwind: str) -> dict[str, Any]:
    response = world.client("finance").post(
        "/api/v1/memories", the_same_as_before(world, northwind), format="json"
    )
    assert response.status_code == 201, response.content
    held: dict[str, Any] = response.json()
    return held


def test_an_option_copied_from_a_finance_fact_is_shown_only_to_finance(
    world, northwind, credit_limit
):
    held = held_by_finance(world, northwind)
    assert [o["memory_id"] for o in held["needs_clarification"]["options"]] == [credit_limit]
    agent, reviewer = world.client("agent"), world.client("rita")
    mcp = InProcess(world.keys["agent"])

    seen = [
        agent.get(f"/api/v1/memories/{held['id']}").json(),
        reviewer.get(f"/api/v1/memories/{held['id']}").json(),
        agent.get(f"/api/v1/memories/{held['id']}/versions").json()[0],
        agent.get(f"/api/v1/memories/{held['id']}/versions/1").json(),
        next(f for f in agent.get(f"/api/v1/entities/{northwind}/facts").json()["results"]),
        answer(mcp.call("get_memory", {"memory_id": held["id"]})),
        answer(mcp.call("list_entity_facts", {"entity_id": northwind}))["results"][0],
    ]

    for memory in seen:
        assert memory["id"] == held["id"]
        assert memory["needs_clarification"]["options"] == []
        assert "50000" not in str(memory) and credit_limit not in str(memory)
    assert agent.get(f"/api/v1/memories/{credit_limit}").status_code == 404
    mine = world.client("finance").get(f"/api/v1/memories/{held['id']}").json()
    assert mine["needs_clarification"]["options"][0]["value"] == CREDIT


def test_a_reviewer_cannot_choose_an_option_hidden_from_them(world, northwind, credit_limit):
    held = held_by_finance(world, northwind)

    refused = world.client("rita").post(
        f"/api/v1/memories/{held['id']}/clarify", {"choice": "opt_1"}, format="json"
    )

    assert refused.status_code == 422
    assert refused["Content-Type"] == "application/problem+json"
    assert refused.json()["errors"]["choice"] == ["must be one of the options: none you may see"]
    version = MemoryVersion.objects.get(item_id=held["id"])
    assert (version.status, version.value) == (Status.HELD_UNRESOLVED, None)
    assert not AuditEvent.objects.filter(action="memory.clarified").exists()


def test_a_value_chosen_from_a_finance_fact_stays_finance_only(world, northwind, credit_limit):
    held = held_by_finance(world, northwind)

    chosen = world.client("finance").post(
        f"/api/v1/memories/{held['id']}/clarify", {"choice": "opt_1"}, format="json"
    )

    assert chosen.status_code == 200, chosen.content
    body = chosen.json()
    assert (body["status"], body["value"], body["visibility"]) == (
        "pending_review",
        CREDIT,
        ["finance"],
    )
    origin = MemoryVersion.objects.get(item_id=credit_limit)
    assert set(origin.source_ids) <= set(body["sources"])
    assert world.client("rita").get(f"/api/v1/memories/{held['id']}").status_code == 404
    assert world.client("agent").get(f"/api/v1/memories/{held['id']}").status_code == 404
    event = AuditEvent.objects.get(action="memory.clarified")
    assert event.data["copied_from"] == f"{credit_limit} v1"


def test_an_option_disappears_once_its_memory_is_narrowed(world, story, northwind):
    """The reader's view is read when the option is shown, not when it was asked."""
    open_fact = story.activate(
        kind="task_fact",
        subject=northwind,
        field="credit_limit",
        value=CREDIT,
        statement="Northwind's credit limit is 50000 EUR.",
        scope={"task": "q3-review"},
        expires_at=later(30),
    )
    world.keys["finance"] = tenancy.api_key_create(
        tenant=world.tenant, agent_name="ledger", labels=["finance", "staff"]
    )[1]
    held = held_by_finance(world, northwind)
    assert held["needs_clarification"]["options"][0]["memory_id"] == open_fact.item_id
    MemoryVersion.objects.filter(pk=open_fact.pk).update(required_visibility=[["finance"]])

    now = world.client("agent").get(f"/api/v1/memories/{held['id']}").json()

    assert now["needs_clarification"]["options"] == []


def test_my_proposals_list_only_what_my_key_may_see_now(world, story, northwind):
    hr_key = tenancy.api_key_create(
        tenant=world.tenant, agent_name="people", labels=["hr", "staff"]
    )
    world.keys["people"] = hr_key[1]
    people = world.client("people")
    source = record_source(people, "business_record", "Salary band review.")
    proposal = {
        "kind": "task_fact",
        "subject": northwind,
        "field": "salary_band",
        "value": "B7",
        "statement": "The Northwind liaison is on salary band B7.",
        "scope": {"task": "hr-review"},
        "owner": "rita",
        "expires_at": iso(later(7)),
        "sources": [source],
        "visibility": ["hr"],
    }
    made = people.post("/api/v1/memories", proposal, format="json")
    assert made.status_code == 201, made.content
    assert [p["memory_id"] for p in people.get("/api/v1/proposals").json()["results"]] == [
        made.json()["id"]
    ]

    ApiKey.objects.filter(pk=hr_key[0].pk).update(labels=["staff"])

    assert people.get("/api/v1/proposals").json()["results"] == []
    listed = answer(InProcess(world.keys["people"]).call("list_my_proposals", {}))
    assert listed["results"] == []
    assert "B7" not in str(listed)


def test_a_subjects_listing_reads_no_more_with_hidden_facts_than_without(
    world, story, finance, northwind
):
    """Hidden rows are dropped by the query: the time a listing takes, and the queries it
    makes, do not tell how many facts of the subject a reader may not see."""
    agent = world.client("agent")
    story.propose(
        kind="task_fact",
        subject=northwind,
        field="visible_note",
        value="open",
        scope={"task": "t-open"},
        expires_at=later(7),
    )

    def queries(path: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert agent.get(path).status_code == 200
        return len(captured)

    paths = [
        f"/api/v1/memories?subject={northwind}&limit=1",
        f"/api/v1/entities/{northwind}/facts?limit=1",
    ]
    [queries(path) for path in paths]  # the key's first request of the test reads more
    without = [queries(path) for path in paths]
    for n in range(12):
        story.propose(
            kind="task_fact",
            subject=northwind,
            field=f"hidden_{n:02d}",
            value=n,
            scope={"task": "t-hidden"},
            expires_at=later(7),
            visibility=["finance"],
            by=finance,
        )

    assert [queries(path) for path in paths] == without
    listed = agent.get(f"/api/v1/memories?subject={northwind}&limit=1").json()
    assert [m["field"] for m in listed["results"]] == ["visible_note"]
    assert listed["next"] is None


def test_a_label_no_one_holds_is_refused_naming_visibility(world, northwind):
    agent = world.client("agent")
    made_up = {"kind": "message", "content": "for nobody", "visibility": ["nobody-at-all"]}

    source = agent.post("/api/v1/sources", made_up, format="json")

    assert source.status_code == 422
    assert source.json()["errors"]["visibility"] == [
        "no person, key or source of this tenant holds the label 'nobody-at-all'"
    ]
    evidence = record_source(agent, "business_record", "Order t-1 note.")
    proposal = {
        "kind": "task_fact",
        "subject": northwind,
        "field": "note",
        "value": "x",
        "statement": "A note for t-1.",
        "scope": {"task": "t-1"},
        "owner": "rita",
        "expires_at": iso(later(7)),
        "sources": [evidence],
        "visibility": ["staff", "nobody-at-all"],
    }
    refused = agent.post("/api/v1/memories", proposal, format="json")
    assert refused.status_code == 422
    assert list(refused.json()["errors"]) == ["visibility"]
    assert not MemoryVersion.objects.filter(field="note").exists()
    assert (
        agent.post(
            "/api/v1/memories", {**proposal, "visibility": ["staff"]}, format="json"
        ).status_code
        == 201
    )


def test_a_finance_value_for_a_staff_only_memory_is_refused_in_words(
    world, northwind, credit_limit
):
    """A memory carries one set of labels: it cannot be both staff-only and finance-only."""
    body = {**the_same_as_before(world, northwind), "visibility": ["staff"]}
    held = world.client("finance").post("/api/v1/memories", body, format="json").json()

    refused = world.client("finance").post(
        f"/api/v1/memories/{held['id']}/clarify", {"choice": "opt_1"}, format="json"
    )

    assert refused.status_code == 422
    (message,) = refused.json()["errors"]["choice"]
    assert "holders of finance" in message and "cannot keep both" in message
    assert MemoryVersion.objects.get(item_id=held["id"]).value is None
