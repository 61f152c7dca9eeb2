"""Clarification edge cases (issue 44, point 11): a value question asked while the subject
is only a mention waits for the subject and then offers that subject's values, as far as
the chooser may see them; a literal value that looks like a pointer ("it", the ISO code
for Italian; "The Usual", a band) is stored as given where the field catalog makes it
literal or the proposer says so with ``value_is_literal``."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts import tenancy
from accounts.grants import permission_grant
from agent_mcp.tools import BY_NAME
from audit.models import AuditEvent
from core.principals import Principal
from memory.models import MemoryVersion, Status
from tests.conftest import World, later
from tests.mcp.support import InProcess, answer, problem
from tests.resolve.conftest import Story
from tests.resolve.test_clarification import HOME, OFFICE, addresses, send_it_there

__all__ = ["addresses"]  # the fixture, shared with the clarification stories

GYM = "1 Gym Lane"
VAULT = "9 Vault Street"
OPENAPI_JSON = "application/vnd.oai.openapi+json"


def there_for(world: World, mention: str, **extra: Any) -> dict[str, Any]:
    """ "Send Dana's order there": neither the subject nor the value named."""
    body = send_it_there(world, "", subject_mention=mention, **extra)
    del body["subject"]
    return body


def clarify(world: World, who: str, memory_id: str, **answer: Any) -> Any:
    return world.client(who).post(f"/api/v1/memories/{memory_id}/clarify", answer, format="json")


def test_there_for_a_mentioned_subject_waits_for_the_subject_then_offers_its_addresses(
    world, dana, addresses
):
    agent = world.client("agent")

    proposed = agent.post("/api/v1/memories", there_for(world, "Dana"), format="json")

    assert proposed.status_code == 201, proposed.content
    held = proposed.json()
    first = held["needs_clarification"]
    assert (first["member"], first["remaining"]) == ("subject", 1)
    assert [o["id"] for o in first["options"]] == [dana]

    answered = clarify(world, "agent", held["id"], choice=dana)

    assert answered.status_code == 200, answered.content
    now = answered.json()
    assert (now["status"], now["subject"], now["value"]) == ("held_unresolved", dana, None)
    question = now["needs_clarification"]
    assert (question["member"], question["mention"], question["remaining"]) == (
        "value",
        "there",
        0,
    )
    assert {o["value"]: (o["id"], o["memory_id"]) for o in question["options"]} == {
        HOME: ("opt_1", addresses["home"]),
        OFFICE: ("opt_2", addresses["office"]),
    }
    done = clarify(world, "agent", held["id"], choice="opt_2").json()
    assert (done["status"], done["value"]) == ("pending_review", OFFICE)


def test_a_linked_subject_adds_its_values_after_the_agents_own_options(world, dana, addresses):
    """The options the agent brought keep their ids: an answer given from them before the
    subject was linked still means what it meant."""
    body = there_for(world, "Dana Kim", value_options=[{"label": "the gym", "value": GYM}])
    held = world.client("agent").post("/api/v1/memories", body, format="json").json()

    linked = world.client("rita").post(
        f"/api/v1/memories/{held['id']}/link-subject", {"subject": dana}, format="json"
    )

    assert linked.status_code == 200, linked.content
    question = world.client("agent").get(f"/api/v1/memories/{held['id']}").json()
    options = question["needs_clarification"]["options"]
    assert [(o["id"], o["value"]) for o in options] == [
        ("opt_1", GYM),
        ("opt_2", HOME),
        ("opt_3", OFFICE),
    ]


@pytest.fixture
def finance(world: World) -> Principal:
    world.keys["finance"] = tenancy.api_key_create(
        tenant=world.tenant, agent_name="ledger", labels=["finance", "staff"]
    )[1]
    return Principal(tenant=world.tenant, name="agent:ledger", labels=frozenset({"finance"}))


def test_the_waiting_question_offers_only_what_the_chooser_may_see(
    world, story: Story, dana, addresses, finance
):
    """The finance agent answers the subject and is offered Dana's bank address; rita, a
    reviewer without the finance label, is offered the other two and cannot choose it."""
    story.activate(
        kind="task_fact",
        subject=dana,
        field="delivery_address",
        value=VAULT,
        statement="Order order-f goes to Dana's bank.",
        scope={"task": "order-f"},
        expires_at=later(5),
        visibility=["finance"],
        by=finance,
    )
    body = there_for(world, "Dana")
    held = world.client("finance").post("/api/v1/memories", body, format="json")
    memory_id = held.json()["id"]

    seen = clarify(world, "finance", memory_id, choice=dana).json()

    offered = {o["value"]: o["id"] for o in seen["needs_clarification"]["options"]}
    assert sorted(offered) == sorted([HOME, OFFICE, VAULT])
    for_rita = world.client("rita").get(f"/api/v1/memories/{memory_id}")
    assert for_rita.status_code == 200, for_rita.content
    shown = for_rita.json()["needs_clarification"]["options"]
    assert sorted(o["value"] for o in shown) == [HOME, OFFICE]
    refused = clarify(world, "rita", memory_id, choice=offered[VAULT])
    assert refused.status_code == 422 and list(refused.json()["errors"]) == ["choice"]
    assert MemoryVersion.objects.get(item_id=memory_id).value is None


def test_answering_the_waiting_value_first_is_422_naming_member(world, dana, addresses):
    held = world.client("agent").post("/api/v1/memories", there_for(world, "Dana"), format="json")
    memory_id = held.json()["id"]

    refused = clarify(world, "agent", memory_id, choice="opt_1", member="value")

    assert refused.status_code == 422
    assert refused["Content-Type"] == "application/problem+json"
    assert list(refused.json()["errors"]) == ["member"]
    assert "answer the subject first" in refused.json()["errors"]["member"][0]
    assert not AuditEvent.objects.filter(action="memory.clarified").exists()
    assert MemoryVersion.objects.get(item_id=memory_id).subject_id is None


def test_a_subject_with_no_value_in_use_says_to_give_the_value(world, story: Story):
    nobody = story.entity("Dana Lee")
    held = world.client("agent").post(
        "/api/v1/memories", there_for(world, "Dana Lee"), format="json"
    )
    memory_id = held.json()["id"]

    now = clarify(world, "agent", memory_id, choice=nobody).json()

    question = now["needs_clarification"]
    assert (question["member"], question["options"]) == ("value", [])
    assert question["question"] == (
        "Memgov holds no delivery_address for this subject that 'there' could mean: "
        "correct the memory with the value itself."
    )
    assert MemoryVersion.objects.get(item_id=memory_id).status == Status.HELD_UNRESOLVED


def literal(world: World, subject: str, field: str, value: Any, **extra: Any) -> dict[str, Any]:
    """A preference of Dana's whose value reads like a pointer but is not one."""
    body = send_it_there(world, subject, field=field, value=value, **extra)
    body.update(kind="preference", scope={}, expires_at=None, owner="nora")
    body["statement"] = f"Dana's {field} is {value}."
    return body


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"enum": ["de", "en", "it"]}, "it"),
        ({"type": "string", "pattern": "^[a-z]{2}$"}, "it"),
        ({"type": ["integer", "string"], "const": "it"}, "it"),
        ({"type": "object"}, "there"),  # not stored (not an object), never asked about
    ],
)
def test_a_field_whose_schema_makes_values_literal_asks_no_question(world, dana, schema, value):
    permission_grant(user=world.users["rita"], tenant=world.tenant, codename="tenant_admin")
    put = world.client("rita").put("/api/v1/fields/language", {"value_schema": schema}, "json")
    assert put.status_code in (200, 201), put.content

    proposed = world.client("agent").post(
        "/api/v1/memories", literal(world, dana, "language", value), format="json"
    )

    if schema.get("type") == "object":
        assert proposed.status_code == 422
        assert list(proposed.json()["errors"]) == ["value"]
        assert not MemoryVersion.objects.exists()
        return
    assert proposed.status_code == 201, proposed.content
    body = proposed.json()
    assert (body["status"], body["value"], body["needs_clarification"]) == (
        "checking",
        "it",
        None,
    )


def test_a_band_called_the_usual_is_stored_when_the_proposer_says_it_is_literal(world, dana):
    """Over MCP too: the tool's input schema has the member, and the answer the value."""
    agent = InProcess(world.keys["agent"])
    body = literal(world, dana, "favourite_band", "The Usual", value_is_literal=True)

    stored = answer(agent.call("propose_memory", body))

    assert (stored["status"], stored["value"], stored["needs_clarification"]) == (
        "checking",
        "The Usual",
        None,
    )
    # Without it, "the usual" points at something said before: nothing of Dana's to offer.
    asked = problem(agent.call("propose_memory", {**body, "value_is_literal": False}), 422)
    assert list(asked["errors"]) == ["value_mention"]


@pytest.mark.parametrize(
    ("change", "member"),
    [
        ({"value_is_literal": "yes"}, "value_is_literal"),
        ({"value_is_literal": True, "value_mention": "there"}, "value_is_literal"),
    ],
)
def test_a_wrong_value_is_literal_is_422_naming_it_and_changes_nothing(world, dana, change, member):
    body = {**literal(world, dana, "favourite_band", "The Usual"), **change}
    if "value_mention" in change:
        del body["value"]

    refused = world.client("agent").post("/api/v1/memories", body, format="json")

    assert refused.status_code == 422
    assert refused["Content-Type"] == "application/problem+json"
    assert list(refused.json()["errors"]) == [member]
    assert not MemoryVersion.objects.exists()


def test_value_is_literal_is_in_the_openapi_schema_and_the_tool_input(db):
    schema = APIClient().get("/api/schema/", HTTP_ACCEPT=OPENAPI_JSON).json()
    member = schema["components"]["schemas"]["ProposalInput"]["properties"]["value_is_literal"]
    tool = BY_NAME["propose_memory"].input_schema()["properties"]["value_is_literal"]

    assert (member["type"], tool["type"]) == ("boolean", "boolean")
    assert "ISO code" in member["description"] and "ISO code" in tool["description"]
