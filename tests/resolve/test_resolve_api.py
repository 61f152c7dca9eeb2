"""The resolve contract at its edges: the policy every answer names, bad input (422, never
a 500), and subjects the caller's tenant does not have (a 404, like any other id)."""

from __future__ import annotations

import pytest

from accounts import tenancy
from memory import entities, proposals
from memory.models import MemoryVersion
from tests.conftest import later
from tests.resolve.conftest import Story, resolve, winners

PROBLEM = "application/problem+json"


@pytest.fixture
def office(story: Story, dana: str, home: MemoryVersion) -> MemoryVersion:
    return story.activate(
        kind="task_fact",
        subject=dana,
        field="delivery_address",
        value="4 Dock Road",
        scope={"task": "order-a"},
        expires_at=later(7),
    )


def test_policy_get_shows_the_current_version_and_precedence(world):
    response = world.client("agent").get("/api/v1/policy")

    assert response.status_code == 200
    body = response.json()
    assert body["version"] == "1"
    assert body["precedence"] == {
        "order": ["specificity", "kind", "verification", "valid_from"],
        "kind_rank": ["task_fact", "enterprise_rule", "preference"],
        "verification_rank": ["verified_record", "confirmed", "asserted"],
    }
    assert body["published_at"].endswith("Z")


def test_every_answer_names_the_policy_version(world, story, dana, home):
    client = world.client("agent")
    stranger = story.entity("Nobody Known", "customer")

    answers = [
        resolve(client, subject=dana),
        resolve(client, subject=dana, explain=True),
        resolve(client, subject=dana, fields=["no_such_field"]),
        resolve(client, subject=stranger),
        resolve(client, subject=dana, task_id="t-9"),
    ]

    assert [a["policy_version"] for a in answers] == ["1"] * 5


def test_a_published_policy_is_the_one_answers_use(world, story, dana, home, office):
    kind_first = {
        "order": ["kind", "specificity", "verification", "valid_from"],
        "kind_rank": ["task_fact", "enterprise_rule", "preference"],
    }
    # Flag only: under ``suspend`` the office fact, outranked in its own scope, would leave use.
    tenancy.tenant_update_settings(tenant=world.tenant, revalidation_failure="flag")
    before = resolve(world.client("agent"), subject=dana, context={"task": "order-a"})
    with story.on_commit(execute=True):  # cache invalidation and re-validation run on commit
        published = world.client("rita").post(
            "/api/v1/policy",
            {"precedence": kind_first, "reason": "kinds first"},
            format="json",
        )

    body = resolve(world.client("agent"), subject=dana, context={"task": "order-a"})
    current = world.client("agent").get("/api/v1/policy").json()

    assert winners(before) == {"delivery_address": "4 Dock Road"}
    assert before["facts"][0]["reason"] == (
        f"task scope is more specific than the preference ({home.item_id}, unscoped)"
    )
    assert published.status_code == 201, published.content
    assert published.json()["version"] == "2"
    assert current["version"] == "2"
    assert body["policy_version"] == "2"
    assert winners(body) == {"delivery_address": "4 Dock Road"}
    assert body["facts"][0]["reason"] == f"task_fact outranks preference ({home.item_id})"


def test_a_policy_ranking_preferences_above_reviewed_kinds_is_refused(world, story, dana, office):
    preference_first = {"kind_rank": ["preference", "task_fact", "enterprise_rule"]}

    response = world.client("rita").post(
        "/api/v1/policy",
        {"precedence": preference_first, "reason": "customers' own words first"},
        format="json",
    )

    assert response.status_code == 422
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["errors"] == {
        "precedence": [
            "precedence.kind_rank: 'preference' must be ranked last: an unreviewed item "
            "never outranks a reviewed one (task_fact, enterprise_rule)"
        ]
    }
    assert world.client("agent").get("/api/v1/policy").json()["version"] == "1"


def test_an_agent_cannot_publish_a_policy(world):
    response = world.client("agent").post(
        "/api/v1/policy", {"precedence": {}, "reason": "agents decide"}, format="json"
    )

    assert response.status_code == 403
    assert world.client("agent").get("/api/v1/policy").json()["version"] == "1"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"fields": "delivery_address"}, "fields"),
        ({"fields": []}, "fields"),
        ({"fields": [{"name": "delivery_address"}]}, "fields.0"),
        ({"valid_at": "2025-04-15T10:00:00"}, "valid_at"),
        ({"known_at": "2025-04-15T10:00:00"}, "known_at"),
        ({"valid_at": "last April"}, "valid_at"),
        ({"context": {"project": ["P-9"]}}, "context.project"),
        ({"context": "P-9"}, "context"),
        ({"explain": "perhaps"}, "explain"),
        ({"subject": None}, "subject"),
    ],
    ids=[
        "fields-not-a-list",
        "fields-empty",
        "fields-of-objects",
        "valid-at-without-zone",
        "known-at-without-zone",
        "valid-at-not-a-time",
        "context-value-not-a-string",
        "context-not-an-object",
        "explain-not-a-boolean",
        "subject-null",
    ],
)
def test_invalid_resolve_requests_are_422_naming_the_field(world, dana, body, field):
    response = world.client("agent").post(
        "/api/v1/resolve", {"subject": dana, **body}, format="json"
    )

    assert response.status_code == 422, response.content
    assert response["Content-Type"] == PROBLEM
    problem = response.json()
    assert problem["status"] == 422
    assert list(problem["errors"]) == [field]


def test_a_request_without_a_subject_is_422(world):
    response = world.client("agent").post("/api/v1/resolve", {"context": {}}, format="json")

    assert response.status_code == 422
    assert list(response.json()["errors"]) == ["subject"]


def test_a_body_that_is_not_an_object_is_422(world, dana):
    response = world.client("agent").post("/api/v1/resolve", [dana], format="json")

    assert response.status_code == 422
    assert response["Content-Type"] == PROBLEM


def test_malformed_json_is_400(world):
    response = world.client("agent").post(
        "/api/v1/resolve", '{"subject": ', content_type="application/json"
    )

    assert response.status_code == 400
    assert response["Content-Type"] == PROBLEM


def test_resolve_without_a_key_is_401(client, db):
    response = client.post("/api/v1/resolve", {"subject": "ent_x"}, content_type="application/json")

    assert response.status_code == 401
    assert response["Content-Type"] == PROBLEM


def test_a_time_with_an_offset_is_accepted_and_answered_in_utc(world, dana, home):
    body = resolve(
        world.client("agent"),
        subject=dana,
        valid_at="2025-04-15T15:30:00+05:30",
        known_at="2030-01-01T00:00:00-02:00",
    )

    assert body["valid_at"] == "2025-04-15T10:00:00Z"
    assert body["known_at"] == "2030-01-01T02:00:00Z"
    assert winners(body) == {"delivery_address": "12 Elm Street"}


def test_another_tenants_subject_is_a_404_that_leaks_nothing_of_its_memory(world, story):
    zed = world.principal("zed")
    theirs = entities.entity_create(principal=zed, kind="customer", name="Globex customer").pk
    with story.on_commit(execute=True):
        proposals.memory_propose(
            principal=zed,
            data={
                "kind": "preference",
                "subject": theirs,
                "field": "delivery_address",
                "value": "Globex HQ",
                "statement": "Globex's customer wants deliveries at HQ.",
                "scope": {},
                "owner": "zed",
                "expires_at": None,
                "sources": [],
            },
        )
    client = world.client("agent")

    named = client.post(
        "/api/v1/resolve",
        {"subject": theirs, "fields": ["delivery_address"], "explain": True},
        format="json",
    )
    their_own = resolve(world.client("zed"), subject=theirs)

    assert named.status_code == 404
    assert named.json()["detail"] == f"No entity {theirs}."
    assert "Globex HQ" not in named.content.decode()
    assert winners(their_own) == {"delivery_address": "Globex HQ"}


def test_a_field_named_twice_is_answered_once(world, dana, home):
    body = resolve(
        world.client("agent"), subject=dana, fields=["delivery_address", "delivery_address"]
    )

    assert [f["field"] for f in body["facts"]] == ["delivery_address"]


def test_resolve_on_a_subject_that_does_not_exist_is_a_404(world):
    response = world.client("agent").post(
        "/api/v1/resolve", {"subject": "ent_no_such_customer"}, format="json"
    )

    assert response.status_code == 404
    assert response["Content-Type"] == PROBLEM
    assert response.json() == {
        "type": "https://memgov.dev/problems/not-found",
        "title": "Not Found",
        "status": 404,
        "detail": "No entity ent_no_such_customer.",
    }
    # the same shape as any other unknown id
    other = world.client("agent").get("/api/v1/entities/ent_no_such_customer")
    assert other.status_code == 404
    assert set(other.json()) == set(response.json())


def test_resolve_on_another_tenants_subject_is_the_same_404(world, story):
    theirs = entities.entity_create(
        principal=world.principal("zed"), kind="person", name="Globex Dana"
    ).pk

    response = world.client("agent").post(
        "/api/v1/resolve", {"subject": theirs, "task_id": "t-1"}, format="json"
    )

    assert response.status_code == 404
    assert response.json()["detail"] == f"No entity {theirs}."
    assert resolve(world.client("zed"), subject=theirs)["facts"] == []  # theirs sees it


def test_a_subject_of_this_tenant_without_memories_is_an_empty_answer(world, story):
    quiet = story.entity("Quiet Customer", "customer")

    body = resolve(world.client("agent"), subject=quiet, fields=["delivery_address"])

    assert body["facts"] == []
    assert [a["reason"] for a in body["abstentions"]] == ["no_applicable_fact"]
