"""Clarification (issue 35; seed 000 "ask for clarification", seed 002 "ask which address
'there' means"): a proposal whose subject or value is unclear answers with the question and
its options instead of a silent hold, and the proposer or a reviewer completes it."""

from __future__ import annotations

from typing import Any

import pytest

from accounts import tenancy
from accounts.grants import permission_grant
from audit.models import AuditEvent
from memory.models import Clarification, MemoryVersion, Status
from tests.api.support import record_source
from tests.conftest import World, iso, later
from tests.mcp.support import InProcess, answer, problem
from tests.resolve.conftest import Story

HOME, OFFICE = "12 Elm Street", "4 Dock Road"


@pytest.fixture
def addresses(story: Story, dana: str) -> dict[str, str]:
    """Dana's home preference and the office address of order-a, both in use."""
    home = story.activate(
        kind="preference",
        subject=dana,
        field="delivery_address",
        value=HOME,
        statement="Dana normally wants deliveries at home.",
        scope={},
        expires_at=None,
        owner="nora",
    )
    office = story.activate(
        kind="task_fact",
        subject=dana,
        field="delivery_address",
        value=OFFICE,
        statement="Order order-a goes to Dana's office.",
        scope={"task": "order-a"},
        expires_at=later(3),
    )
    return {"home": home.item_id, "office": office.item_id}


def send_it_there(world: World, subject: str, **extra: Any) -> dict[str, Any]:
    """Order order-b: the customer said "send it there"."""
    record = record_source(
        world.client("agent"), "business_record", "Order order-b: customer says send it there."
    )
    return {
        "kind": "task_fact",
        "subject": subject,
        "field": "delivery_address",
        "value": "there",
        "statement": "Order order-b goes where the customer said.",
        "scope": {"task": "order-b"},
        "owner": "rita",
        "expires_at": iso(later(7)),
        "sources": [record],
        **extra,
    }


def test_send_it_there_is_answered_with_a_question_not_a_silent_hold(world, dana, addresses):
    agent = world.client("agent")

    response = agent.post("/api/v1/memories", send_it_there(world, dana), format="json")

    assert response.status_code == 201, response.content
    held = response.json()
    assert (held["status"], held["value"]) == ("held_unresolved", None)
    question = held["needs_clarification"]
    assert question["member"] == "value" and question["mention"] == "there"
    assert question["question"] == "Which delivery_address does 'there' mean?"
    assert {o["value"]: o["memory_id"] for o in question["options"]} == {
        HOME: addresses["home"],
        OFFICE: addresses["office"],
    }
    assert sorted(o["id"] for o in question["options"]) == ["opt_1", "opt_2"]
    office = next(o["id"] for o in question["options"] if o["value"] == OFFICE)

    clarified = agent.post(
        f"/api/v1/memories/{held['id']}/clarify", {"choice": office}, format="json"
    )

    assert clarified.status_code == 200, clarified.content
    body = clarified.json()
    assert (body["status"], body["value"], body["needs_clarification"]) == (
        "pending_review",
        OFFICE,
        None,
    )
    event = AuditEvent.objects.get(action="memory.clarified")
    assert (event.actor, event.data["member"]) == ("agent:bot", "value")
    assert "4 Dock" not in str(event.data)


def test_send_it_there_over_mcp_with_the_agents_own_options(world, dana):
    agent = InProcess(world.keys["agent"])
    proposal = send_it_there(
        world,
        dana,
        value_mention="there",
        value_options=[{"label": "the gym", "value": "1 Gym Lane"}],
    )
    del proposal["value"]

    held = answer(agent.call("propose_memory", proposal))
    options = held["needs_clarification"]["options"]
    assert options == [
        {"id": "opt_1", "label": "the gym", "value": "1 Gym Lane", "memory_id": None}
    ]

    done = answer(agent.call("clarify", {"memory_id": held["id"], "choice": "opt_1"}))
    assert (done["status"], done["value"]) == ("pending_review", "1 Gym Lane")
    again = problem(agent.call("clarify", {"memory_id": held["id"], "choice": "opt_1"}), 409)
    assert "asks no open question" in again["detail"]


def test_an_ambiguous_subject_mention_lists_each_candidate_by_id(world, story):
    colleague = story.entity("Sarah Lee")
    sister = story.entity("Sarah Kim")
    agent = world.client("agent")
    body = send_it_there(world, "", subject_mention="Sarah", value="Acme")
    del body["subject"]
    body.update(field="employer", kind="preference", scope={}, expires_at=None, owner="nora")

    held = agent.post("/api/v1/memories", body, format="json").json()

    question = held["needs_clarification"]
    assert question["member"] == "subject" and question["remaining"] == 0
    assert {o["id"] for o in question["options"]} == {colleague, sister}
    wrong = agent.post(
        f"/api/v1/memories/{held['id']}/clarify", {"choice": "ent_nobody"}, format="json"
    )
    assert wrong.status_code == 422 and "choice" in wrong.json()["errors"]
    done = agent.post(
        f"/api/v1/memories/{held['id']}/clarify", {"choice": colleague}, format="json"
    ).json()
    assert (done["subject"], done["status"]) == (colleague, "checking")


@pytest.mark.parametrize(("persona", "status"), [("other-agent", 403), ("nora", 403), ("zed", 404)])
def test_only_the_proposer_or_a_reviewer_may_clarify(world, dana, addresses, persona, status):
    held = (
        world.client("agent")
        .post("/api/v1/memories", send_it_there(world, dana), format="json")
        .json()
    )
    if persona == "other-agent":
        key = tenancy.api_key_create(tenant=world.tenant, agent_name="other", labels=["staff"])[1]
        world.keys[persona] = key
    client = world.client(persona)

    refused = client.post(
        f"/api/v1/memories/{held['id']}/clarify", {"choice": "opt_1"}, format="json"
    )

    assert refused.status_code == status
    assert MemoryVersion.objects.get(item_id=held["id"]).status == Status.HELD_UNRESOLVED
    allowed = world.client("rita").post(
        f"/api/v1/memories/{held['id']}/clarify", {"choice": "opt_1"}, format="json"
    )
    assert allowed.status_code == 200 and allowed.json()["status"] == "pending_review"


def test_a_wrong_option_is_422_naming_the_options_and_changes_nothing(world, dana, addresses):
    agent = world.client("agent")
    held = agent.post("/api/v1/memories", send_it_there(world, dana), format="json").json()

    wrong = agent.post(f"/api/v1/memories/{held['id']}/clarify", {"choice": "opt_9"}, format="json")

    assert wrong.status_code == 422
    assert wrong.json()["errors"]["choice"] == ["must be one of the options: opt_1, opt_2"]
    assert MemoryVersion.objects.get(item_id=held["id"]).value is None
    assert not AuditEvent.objects.filter(action="memory.clarified").exists()


def test_linking_the_subject_leaves_an_unclear_value_held(world, story, dana, addresses):
    """A reviewer who links the subject has not said which address "there" is."""
    agent = world.client("agent")
    body = send_it_there(
        world, "", subject_mention="Dana Kim", value_options=[{"label": "office", "value": OFFICE}]
    )
    del body["subject"]
    held = agent.post("/api/v1/memories", body, format="json").json()
    assert held["needs_clarification"]["remaining"] == 1

    linked = world.client("rita").post(
        f"/api/v1/memories/{held['id']}/link-subject", {"subject": dana}, format="json"
    )

    assert linked.status_code == 200, linked.content
    now = agent.get(f"/api/v1/memories/{held['id']}").json()
    assert (now["status"], now["subject"]) == ("held_unresolved", dana)
    assert now["needs_clarification"]["member"] == "value"


def test_a_value_that_names_something_is_not_a_question(world, dana):
    body = send_it_there(world, dana, value="4 Dock Road")

    response = world.client("agent").post("/api/v1/memories", body, format="json")

    assert response.json()["status"] == "pending_review"
    assert response.json()["needs_clarification"] is None


def test_erasing_the_subject_clears_the_question_and_its_options(
    world, dana, addresses, django_capture_on_commit_callbacks
):
    held = (
        world.client("agent")
        .post("/api/v1/memories", send_it_there(world, dana), format="json")
        .json()
    )
    permission_grant(user=world.users["rita"], tenant=world.tenant, codename="erase_subject")

    with django_capture_on_commit_callbacks(execute=True):
        started = world.client("rita").post(
            f"/api/v1/entities/{dana}/erase", {"reason": "asked to be forgotten"}, format="json"
        )

    assert started.status_code == 202, started.content
    erasure = world.client("rita").get(f"/api/v1/erasures/{started.json()['erasure']}").json()
    assert erasure["status"] == "done" and erasure["counts"]["clarifications"] == 1
    question = Clarification.objects.get(version__item_id=held["id"])
    assert (question.mention, question.question, question.options) == ("", "", [])
