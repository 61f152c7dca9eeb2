"""POST /memories/{id}/versions: a correction is a new version accepted only against the
head (seed 002: a stale summary must never overwrite a correction), and the version in
use stays in use until its successor is active."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import MemoryVersion
from tests.api.support import (
    Written,
    assert_problem,
    create_entity,
    preference_body,
    record_source,
    rule_body,
    task_fact_body,
)
from tests.conftest import iso, later


@pytest.fixture
def dana(world) -> dict[str, str]:
    agent = world.client("agent")
    return {
        "id": create_entity(agent, "Dana Kim"),
        "chat": record_source(agent, "message", "I normally want deliveries at home."),
        "order": record_source(agent, "business_record", "Order order-a: to the office."),
    }


def _propose(world, body: dict[str, Any]) -> dict[str, Any]:
    response = world.client("agent").post("/api/v1/memories", body, "json")
    assert response.status_code == 201, response.content
    return dict(response.json())


def _correct(world, memory_id: str, body: dict[str, Any], if_match: str | None, who="agent"):
    headers = {} if if_match is None else {"HTTP_IF_MATCH": if_match}
    return world.client(who).post(f"/api/v1/memories/{memory_id}/versions", body, "json", **headers)


def _resolve(world, subject: str) -> dict[str, Any]:
    body = {"subject": subject, "fields": ["delivery_address"], "context": {}}
    response = world.client("agent").post("/api/v1/resolve", body, "json")
    assert response.status_code == 200, response.content
    return dict(response.json())


def test_a_correction_against_the_head_is_the_new_head_with_its_etag(world, dana):
    memory = _propose(world, task_fact_body(dana["id"], dana["order"]))

    response = _correct(world, memory["id"], {"value": "5 Dock Road"}, '"1"')

    assert response.status_code == 201, response.content
    assert response["ETag"] == '"2"'
    head = response.json()
    assert (head["id"], head["version"], head["value"]) == (memory["id"], 2, "5 Dock Road")
    assert head["status"] == "pending_review"
    fetched = world.client("agent").get(f"/api/v1/memories/{memory['id']}")
    assert fetched["ETag"] == '"2"'
    assert fetched.json()["version"] == 2


def test_a_stale_writer_gets_409_with_the_current_version_and_writes_nothing(world, dana):
    memory = _propose(world, task_fact_body(dana["id"], dana["order"]))
    assert _correct(world, memory["id"], {"value": "5 Dock Road"}, '"1"').status_code == 201
    given = Written.now()

    stale = _correct(world, memory["id"], {"value": "12 Elm Street"}, '"1"')

    problem = assert_problem(stale, 409)
    assert problem["current_version"] == 2
    assert Written.now() == given
    head = world.client("agent").get(f"/api/v1/memories/{memory['id']}").json()
    assert (head["version"], head["value"]) == (2, "5 Dock Road")


def test_a_correction_naming_a_future_version_is_stale_too(world, dana):
    memory = _propose(world, task_fact_body(dana["id"], dana["order"]))

    response = _correct(world, memory["id"], {"value": "5 Dock Road"}, '"7"')

    assert assert_problem(response, 409)["current_version"] == 1


def test_a_correction_without_if_match_is_a_428_and_writes_nothing(world, dana):
    memory = _propose(world, task_fact_body(dana["id"], dana["order"]))
    given = Written.now()

    response = _correct(world, memory["id"], {"value": "5 Dock Road"}, None)

    assert_problem(response, 428)
    assert Written.now() == given


def test_an_if_match_that_is_not_a_version_number_is_a_422(world, dana):
    memory = _propose(world, task_fact_body(dana["id"], dana["order"]))

    response = _correct(world, memory["id"], {"value": "5 Dock Road"}, '"abc"')

    assert_problem(response, 422, "If-Match")


def test_a_weak_etag_names_the_head_as_well(world, dana):
    memory = _propose(world, task_fact_body(dana["id"], dana["order"]))

    response = _correct(world, memory["id"], {"value": "5 Dock Road"}, 'W/"1"')

    assert response.status_code == 201


def test_omitted_fields_are_copied_from_the_head(world, dana):
    body = task_fact_body(
        dana["id"], dana["order"], valid_from="2026-03-01T00:00:00Z", visibility=["staff"]
    )
    first = _propose(world, body)

    second = _correct(world, first["id"], {"value": "5 Dock Road"}, '"1"').json()

    copied = [
        "kind", "subject", "field", "statement", "scope", "owner", "expires_at", "valid_from",
        "valid_to", "assertion", "sources", "basis", "visibility",
    ]  # fmt: skip
    assert {k: second[k] for k in copied} == {k: first[k] for k in copied}
    assert second["value"] == "5 Dock Road"
    assert second["proposed_by"] == "agent:bot"


def test_a_correction_is_checked_by_the_proposal_rules(world, dana):
    memory = _propose(world, task_fact_body(dana["id"], dana["order"]))
    given = Written.now()

    response = _correct(
        world,
        memory["id"],
        {"owner": "zed", "expires_at": iso(later(-1)), "sources": [dana["chat"]]},
        '"1"',
    )

    problem = assert_problem(response, 422)
    assert sorted(problem["errors"]) == ["expires_at", "owner", "sources"]
    assert Written.now() == given


@pytest.mark.parametrize(
    ("member", "value"),
    [("kind", "preference"), ("subject", "ent_someone_else"), ("field", "billing_address")],
)
def test_kind_subject_and_field_are_fixed_for_a_lineage(world, dana, member: str, value: str):
    memory = _propose(world, task_fact_body(dana["id"], dana["order"]))
    given = Written.now()

    response = _correct(world, memory["id"], {member: value, "value": "5 Dock Road"}, '"1"')

    assert_problem(response, 422, member)
    assert Written.now() == given


def test_restating_the_fixed_members_unchanged_is_allowed(world, dana):
    memory = _propose(world, task_fact_body(dana["id"], dana["order"]))
    same = {"kind": "task_fact", "subject": dana["id"], "field": "delivery_address"}

    response = _correct(world, memory["id"], {**same, "value": "5 Dock Road"}, '"1"')

    assert response.status_code == 201


def test_a_superseded_pending_head_becomes_superseded(world, dana):
    memory = _propose(world, task_fact_body(dana["id"], dana["order"]))

    _correct(world, memory["id"], {"value": "5 Dock Road"}, '"1"')

    first = world.client("agent").get(f"/api/v1/memories/{memory['id']}/versions/1").json()
    assert first["status"] == "superseded"
    assert first["activated_at"] is None
    versions = world.client("agent").get(f"/api/v1/memories/{memory['id']}/versions").json()
    assert [(v["version"], v["status"]) for v in versions] == [
        (1, "superseded"),
        (2, "pending_review"),
    ]


def test_an_approval_never_carries_over_to_the_corrected_version(world):
    agent = world.client("agent")
    northwind = create_entity(agent, "Northwind Metals", "supplier")
    approval = record_source(agent, "approval_record", "APR-2291 v3.")
    memory = _propose(world, rule_body(northwind, approval))
    assert (
        world.client("rita")
        .post(f"/api/v1/memories/{memory['id']}/approve", {}, "json")
        .status_code
        == 200
    )

    head = _correct(world, memory["id"], {"value": "follow exception APR-2291 v4"}, '"1"').json()

    assert head["approvals"] == []
    assert head["status"] == "pending_review"
    first = agent.get(f"/api/v1/memories/{memory['id']}/versions/1").json()
    assert [a["reviewer"] for a in first["approvals"]] == ["rita"]


def test_the_active_version_stays_in_use_until_its_correction_activates(
    world, dana, django_capture_on_commit_callbacks
):
    """Dana's home address is active; a correction to a new address is checked first, and
    meanwhile the resolver keeps answering the old one, flagged ``pending_correction``."""
    agent = world.client("agent")
    with django_capture_on_commit_callbacks(execute=True):
        memory = _propose(world, preference_body(dana["id"], dana["chat"]))
    assert agent.get(f"/api/v1/memories/{memory['id']}").json()["status"] == "active"

    with django_capture_on_commit_callbacks() as gate:
        moved = {"value": "9 Oak Lane", "statement": "Dana now wants deliveries at 9 Oak Lane."}
        head = _correct(world, memory["id"], moved, '"1"').json()

    assert (head["version"], head["status"], head["active_version"]) == (2, "checking", 1)
    first = agent.get(f"/api/v1/memories/{memory['id']}/versions/1").json()
    assert (first["status"], first["deactivated_at"]) == ("active", None)
    fact = _resolve(world, dana["id"])["facts"][0]
    assert (fact["version"], fact["value"], fact["pending_correction"]) == (
        1,
        "12 Elm Street",
        True,
    )

    with django_capture_on_commit_callbacks(execute=True):
        for callback in gate:
            callback()

    fact = _resolve(world, dana["id"])["facts"][0]
    assert (fact["version"], fact["value"], fact["pending_correction"]) == (2, "9 Oak Lane", False)
    versions = MemoryVersion.objects.filter(item_id=memory["id"]).order_by("number")
    assert [v.status for v in versions] == ["superseded", "active"]
    assert versions[0].deactivated_at == versions[1].activated_at


def test_a_correction_writes_one_version_and_its_audit_events(world, dana):
    memory = _propose(world, task_fact_body(dana["id"], dana["order"]))
    given = Written.now()

    _correct(world, memory["id"], {"value": "5 Dock Road"}, '"1"')

    now = Written.now()
    assert (now.items, now.versions) == (given.items, given.versions + 1)
    assert now.events == given.events + 2  # memory.superseded (v1) and memory.corrected (v2)


def test_a_correction_cannot_give_a_preference_a_business_scope(world, dana):
    memory = _propose(world, preference_body(dana["id"], dana["chat"]))
    exception = {"scope": {"project": "P-9", "supplier": "S-17", "batch": "B-3"}}

    response = _correct(world, memory["id"], exception, '"1"')

    problem = assert_problem(response, 422, "scope")
    [message] = problem["errors"]["scope"]
    assert "file a task_fact or an enterprise_rule instead" in message
    assert MemoryVersion.objects.filter(item_id=memory["id"]).count() == 1


def test_a_correction_may_narrow_a_preference_to_one_task(world, dana):
    memory = _propose(world, preference_body(dana["id"], dana["chat"]))

    response = _correct(world, memory["id"], {"scope": {"task": "order-a"}}, '"1"')

    assert response.status_code == 201, response.content
    assert response.json()["scope"] == {"task": "order-a"}


@pytest.mark.parametrize(
    "restated",
    [
        {},  # statement omitted: it would be copied from the head
        {"statement": "Dana normally wants deliveries at home."},
        {"statement": "  dana normally wants   deliveries at home. "},
    ],
    ids=["omitted", "same", "same-but-spacing-and-case"],
)
def test_a_preference_correction_that_moves_the_address_must_say_so(
    world, dana, restated: dict[str, str]
):
    """Issue 33, point 7: the value becomes 5 Dock Road while the statement still says
    "Dana normally wants deliveries at home": a person reading it is misled."""
    memory = _propose(world, preference_body(dana["id"], dana["chat"]))
    given = Written.now()

    response = _correct(world, memory["id"], {"value": "5 Dock Road", **restated}, '"1"')

    problem = assert_problem(response, 422, "statement")
    assert "value" in problem["errors"]["statement"][0]
    assert Written.now() == given


def test_a_preference_correction_with_a_new_value_and_statement_is_taken(world, dana):
    memory = _propose(world, preference_body(dana["id"], dana["chat"]))
    body = {"value": "5 Dock Road", "statement": "Dana now wants deliveries at 5 Dock Road."}

    response = _correct(world, memory["id"], body, '"1"')

    assert response.status_code == 201, response.content
    assert response.json()["statement"] == body["statement"]


def test_a_preference_correction_that_keeps_the_value_may_keep_the_statement(world, dana):
    memory = _propose(world, preference_body(dana["id"], dana["chat"]))

    response = _correct(world, memory["id"], {"expires_at": iso(later(30))}, '"1"')

    assert response.status_code == 201, response.content
