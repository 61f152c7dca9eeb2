"""Sources: what was actually said or recorded, immutable, visible by labels, revocable by
someone with ``retire_memory`` — which retires every memory built on it (seed 001)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts import tenancy
from memory.models import MemoryVersion, Source
from tests.api.support import Written, assert_problem, create_entity, record_source, rule_body
from tests.conftest import iso, later


def test_recording_a_source_answers_every_field_with_its_digest(world):
    body: dict[str, Any] = {
        "kind": "approval_record",
        "content": "APR-2291 v3: renewal of P-9 with S-17 follows the exception process.",
        "external_ref": "APR-2291",
        "version": "3",
        "speaker": "Procurement desk",
        "occurred_at": "2026-06-10T09:30:00+02:00",
        "visibility": ["staff"],
        "metadata": {"system": "erp", "batch": "B-3"},
    }

    response = world.client("agent").post("/api/v1/sources", body, "json")

    assert response.status_code == 201
    source = response.json()
    assert source["id"].startswith("src_")
    assert {k: source[k] for k in body} == {**body, "occurred_at": "2026-06-10T07:30:00Z"}
    assert source["content_sha256"] == hashlib.sha256(body["content"].encode()).hexdigest()
    assert source["received_at"].endswith("Z")
    assert source["revoked_at"] is None


def test_a_source_is_visible_to_every_principal_by_default(world):
    response = world.client("agent").post(
        "/api/v1/sources", {"kind": "message", "content": "hi"}, "json"
    )

    source = response.json()
    assert source["visibility"] == ["*"]
    assert (source["external_ref"], source["version"], source["speaker"]) == (None, None, None)
    assert world.client("nora").get(f"/api/v1/sources/{source['id']}").status_code == 200


def test_content_of_32_kib_is_accepted_and_one_more_character_is_not(world):
    agent = world.client("agent")
    given = Written.now()

    fits = agent.post("/api/v1/sources", {"kind": "document", "content": "x" * 32768}, "json")
    too_long = agent.post("/api/v1/sources", {"kind": "document", "content": "x" * 32769}, "json")

    assert fits.status_code == 201
    assert_problem(too_long, 422, "content")
    assert Written.now().sources == given.sources + 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "hi"}, "kind"),
        ({"kind": "rumour", "content": "hi"}, "kind"),
        ({"kind": "message"}, "content"),
        ({"kind": "message", "content": None}, "content"),
        ({"kind": "message", "content": "hi", "occurred_at": "2026-06-10T09:30:00"}, "occurred_at"),
        ({"kind": "message", "content": "hi", "occurred_at": "June"}, "occurred_at"),
        ({"kind": "message", "content": "hi", "visibility": []}, "visibility"),
        ({"kind": "message", "content": "hi", "visibility": [""]}, "visibility"),
        ({"kind": "message", "content": "hi", "visibility": "staff"}, "visibility"),
        ({"kind": "message", "content": "hi", "metadata": ["a"]}, "metadata"),
        ({"kind": "message", "content": "hi", "external_ref": "x" * 201}, "external_ref"),
    ],
)
def test_an_invalid_source_is_a_422_naming_the_field_and_writes_nothing(world, body, field):
    given = Written.now()

    response = world.client("agent").post("/api/v1/sources", body, "json")

    problem = assert_problem(response, 422)
    assert any(name == field or name.startswith(f"{field}.") for name in problem["errors"])
    assert Written.now() == given


def test_a_source_outside_the_callers_labels_is_a_404(world):
    legal = tenancy.api_key_create(tenant=world.tenant, agent_name="counsel", labels=["legal"])[1]
    counsel = APIClient()
    counsel.credentials(HTTP_AUTHORIZATION=f"Bearer {legal}")
    sealed = record_source(counsel, "approval_record", "Settlement terms.", visibility=["legal"])

    assert counsel.get(f"/api/v1/sources/{sealed}").status_code == 200
    assert_problem(world.client("agent").get(f"/api/v1/sources/{sealed}"), 404)
    assert_problem(world.client("rita").get(f"/api/v1/sources/{sealed}"), 404)


@pytest.fixture
def exception_p9(world) -> dict[str, str]:
    """Seed 001: the P-9 exception, approved by APR-2291, proposed by the agent."""
    agent = world.client("agent")
    northwind = create_entity(agent, "Northwind Metals", "supplier")
    approval = record_source(agent, "approval_record", "APR-2291 v3.", external_ref="APR-2291")
    rule = agent.post(
        "/api/v1/memories", rule_body(northwind, approval, scope={"project": "P-9"}), "json"
    )
    assert rule.status_code == 201
    return {"approval": approval, "rule": rule.json()["id"]}


def test_revoking_the_approval_retires_the_exception_built_on_it(world, exception_p9):
    rita = world.client("rita")

    response = rita.post(
        f"/api/v1/sources/{exception_p9['approval']}/revoke",
        {"reason": "APR-2291 withdrawn"},
        "json",
    )

    assert response.status_code == 200
    body = response.json()
    assert body["memories"] == [exception_p9["rule"]]
    assert body["revoked_at"].endswith("Z")
    rule = rita.get(f"/api/v1/memories/{exception_p9['rule']}").json()
    assert rule["status"] == "retired"
    source = rita.get(f"/api/v1/sources/{exception_p9['approval']}").json()
    assert source["revoked_at"] == body["revoked_at"]
    assert source["content"] == "APR-2291 v3."  # revoked, not erased


def test_a_reviewer_with_retire_memory_over_the_scope_may_revoke(world, exception_p9):
    response = world.client("omar").post(
        f"/api/v1/sources/{exception_p9['approval']}/revoke", {"reason": "withdrawn"}, "json"
    )

    assert response.status_code == 200


@pytest.mark.parametrize("who", ["agent", "nora", "lena"])
def test_revoking_needs_retire_memory(world, exception_p9, who: str):
    given = Written.now()

    response = world.client(who).post(
        f"/api/v1/sources/{exception_p9['approval']}/revoke", {"reason": "withdrawn"}, "json"
    )

    assert_problem(response, 403)
    assert Written.now() == given
    assert Source.objects.get(pk=exception_p9["approval"]).revoked_at is None
    assert MemoryVersion.objects.get(item_id=exception_p9["rule"]).status == "pending_review"


def test_a_scoped_reviewer_may_not_revoke_a_source_nothing_in_its_scope_uses(world):
    loose = record_source(world.client("agent"), "approval_record", "APR-9 for P-10.")

    response = world.client("omar").post(f"/api/v1/sources/{loose}/revoke", {"reason": "x"}, "json")

    assert_problem(response, 403)


def test_a_source_is_revoked_once(world, exception_p9):
    rita = world.client("rita")
    path = f"/api/v1/sources/{exception_p9['approval']}/revoke"
    assert rita.post(path, {"reason": "withdrawn"}, "json").status_code == 200
    given = Written.now()

    again = rita.post(path, {"reason": "withdrawn again"}, "json")

    assert_problem(again, 409)
    assert Written.now() == given


def test_a_revocation_needs_a_reason(world, exception_p9):
    response = world.client("rita").post(
        f"/api/v1/sources/{exception_p9['approval']}/revoke", {}, "json"
    )

    assert_problem(response, 422, "reason")


def test_revocation_leaves_memories_on_other_sources_alone(world, exception_p9):
    agent = world.client("agent")
    northwind = create_entity(agent, "Northwind Metals", "supplier")
    other = record_source(agent, "approval_record", "APR-3000.")
    unrelated = agent.post(
        "/api/v1/memories",
        rule_body(northwind, other, scope={"project": "P-10"}, expires_at=iso(later(5))),
        "json",
    ).json()["id"]

    world.client("rita").post(
        f"/api/v1/sources/{exception_p9['approval']}/revoke", {"reason": "withdrawn"}, "json"
    )

    assert agent.get(f"/api/v1/memories/{unrelated}").json()["status"] == "pending_review"
