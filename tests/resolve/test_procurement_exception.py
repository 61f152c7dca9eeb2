"""Seed 001: an approved exception for one project, supplier and batch stays inside that
scope; everywhere else the tenant-wide rule answers. Two equally ranked rules that
disagree are an abstention, never a guess."""

from __future__ import annotations

import pytest
from django.utils import timezone

from memory.models import MemoryVersion
from tests.conftest import later
from tests.resolve.conftest import Story, outcomes, resolve, winners

EXCEPTION = "follow exception APR-2291"
TENANT_RULE = "check every delivery's materials"
EXACT = {"project": "P-9", "supplier": "S-17", "batch": "B-3"}


@pytest.fixture
def purchasing(story: Story) -> str:
    return story.entity("Renewal purchasing", "process")


@pytest.fixture
def tenant_rule(story: Story, purchasing: str) -> MemoryVersion:
    return story.activate(
        kind="enterprise_rule",
        subject=purchasing,
        field="material_checks",
        value=TENANT_RULE,
        scope={"tenant": "*"},
        expires_at=later(365),
        basis={"ref": "POL-7", "version": "1"},
    )


@pytest.fixture
def exception(story: Story, purchasing: str, tenant_rule: MemoryVersion) -> MemoryVersion:
    approval = story.source(
        "APR-2291 v3: renewal of P-9 with S-17, batch B-3, may follow the exception process.",
        "approval_record",
        external_ref="APR-2291",
        version="3",
    )
    return story.activate(
        kind="enterprise_rule",
        subject=purchasing,
        field="material_checks",
        value=EXCEPTION,
        scope=EXACT,
        expires_at=later(60),
        sources=[approval],
        basis={"ref": "APR-2291", "version": "3"},
    )


def test_exception_applies_to_project_p9_supplier_s17_batch_b3(
    world, purchasing, tenant_rule, exception
):
    body = resolve(world.client("agent"), subject=purchasing, context=EXACT)

    [fact] = body["facts"]
    assert (fact["memory_id"], fact["value"], fact["verification"]) == (
        exception.item_id,
        EXCEPTION,
        "confirmed",
    )
    assert fact["scope"] == EXACT
    assert fact["basis"] == {"ref": "APR-2291", "version": "3"}
    assert fact["reason"] == (
        "batch+project+supplier scope is more specific than the enterprise_rule "
        f"({tenant_rule.item_id}, tenant-wide)"
    )


def test_exception_for_project_p9_does_not_apply_to_p10(world, purchasing, tenant_rule, exception):
    body = resolve(
        world.client("agent"),
        subject=purchasing,
        context={**EXACT, "project": "P-10"},
        explain=True,
    )

    assert winners(body) == {"material_checks": TENANT_RULE}
    assert body["facts"][0]["memory_id"] == tenant_rule.item_id
    assert outcomes(body) == {tenant_rule.item_id: "selected", exception.item_id: "out_of_scope"}


def test_exception_for_batch_b3_does_not_apply_to_b4(world, purchasing, tenant_rule, exception):
    body = resolve(world.client("agent"), subject=purchasing, context={**EXACT, "batch": "B-4"})

    assert winners(body) == {"material_checks": TENANT_RULE}
    assert body["facts"][0]["memory_id"] == tenant_rule.item_id


def test_exception_needs_every_dimension_of_its_scope(world, purchasing, tenant_rule, exception):
    body = resolve(world.client("agent"), subject=purchasing, context={"project": "P-9"})

    assert winners(body) == {"material_checks": TENANT_RULE}


def test_tenant_wide_rule_answers_an_empty_context(world, purchasing, tenant_rule, exception):
    body = resolve(world.client("agent"), subject=purchasing)

    assert body["facts"][0]["memory_id"] == tenant_rule.item_id
    assert body["facts"][0]["reason"] == "only applicable fact"


def test_exception_for_p9_is_not_used_for_another_subject(world, story, exception):
    other = story.entity("New supplier onboarding", "process")

    body = resolve(world.client("agent"), subject=other, fields=["material_checks"], context=EXACT)

    assert body["facts"] == []
    assert [a["reason"] for a in body["abstentions"]] == ["no_applicable_fact"]


@pytest.fixture
def two_rules(story: Story, purchasing: str) -> tuple[MemoryVersion, MemoryVersion]:
    """Two rules of one rank (one dimension each, both confirmed, no start) that disagree:
    each passed its own checks, because their scopes never met before."""
    by_project = story.activate(
        kind="enterprise_rule",
        subject=purchasing,
        field="quotes_required",
        value=2,
        scope={"project": "P-9"},
        expires_at=later(90),
    )
    by_supplier = story.activate(
        kind="enterprise_rule",
        subject=purchasing,
        field="quotes_required",
        value=3,
        scope={"supplier": "S-17"},
        expires_at=later(90),
    )
    return by_project, by_supplier


def test_equally_ranked_rules_that_disagree_are_a_conflict(world, purchasing, two_rules):
    by_project, by_supplier = two_rules

    body = resolve(
        world.client("agent"),
        subject=purchasing,
        context={"project": "P-9", "supplier": "S-17"},
        explain=True,
    )

    ids = sorted([by_project.item_id, by_supplier.item_id])
    assert body["facts"] == []
    assert body["abstentions"] == [
        {
            "field": "quotes_required",
            "reason": "conflict",
            "detail": (
                f"2 equally ranked memories give different values for quotes_required "
                f"({ids[0]}, {ids[1]}); the policy cannot choose, so none is used"
            ),
        }
    ]
    assert outcomes(body) == {by_project.item_id: "outranked", by_supplier.item_id: "outranked"}


def test_each_rule_alone_answers_inside_its_own_scope(world, purchasing, two_rules):
    by_project, by_supplier = two_rules
    client = world.client("agent")

    project_only = resolve(client, subject=purchasing, context={"project": "P-9"})
    supplier_only = resolve(client, subject=purchasing, context={"supplier": "S-17"})

    assert winners(project_only) == {"quotes_required": 2}
    assert project_only["facts"][0]["memory_id"] == by_project.item_id
    assert winners(supplier_only) == {"quotes_required": 3}
    assert supplier_only["facts"][0]["memory_id"] == by_supplier.item_id


def test_an_older_preference_stored_with_a_business_scope_never_outranks_the_rule(
    world, story, purchasing, tenant_rule
):
    # Given a preference from before the scope rule and the review tier, stored active with
    # the exception's scope (written behind the proposal rules and the gate, as an old row
    # would be: today its own applicable check fails, the rule outranks it).
    smuggled = story.propose(
        kind="preference",
        subject=purchasing,
        field="material_checks",
        value="skip the checks",
        scope={},
        expires_at=None,
    )
    MemoryVersion.objects.filter(pk=smuggled.pk).update(
        scope=EXACT, status="active", activated_at=timezone.now()
    )

    body = resolve(world.client("agent"), subject=purchasing, context=EXACT, explain=True)

    assert winners(body) == {"material_checks": TENANT_RULE}
    assert body["facts"][0]["reason"] == (
        f"enterprise_rule was reviewed and outranks the unreviewed preference "
        f"({smuggled.item_id}, batch+project+supplier scope) whatever its scope"
    )
    assert outcomes(body)[smuggled.item_id] == "outranked"


def test_the_same_exception_filed_as_a_preference_is_refused_naming_scope(world, purchasing):
    message = world.client("agent").post(
        "/api/v1/sources", {"kind": "message", "content": "Skip checks for B-3."}, format="json"
    )
    body = {
        "kind": "preference",
        "subject": purchasing,
        "field": "material_checks",
        "value": "skip the checks",
        "statement": "Batch B-3 skips the material checks.",
        "scope": EXACT,
        "owner": "rita",
        "expires_at": None,
        "sources": [message.json()["id"]],
    }

    response = world.client("agent").post("/api/v1/memories", body, format="json")

    assert response.status_code == 422
    assert response["Content-Type"] == "application/problem+json"
    [message_text] = response.json()["errors"]["scope"]
    assert "file a task_fact or an enterprise_rule instead" in message_text
    assert not MemoryVersion.objects.filter(field="material_checks", kind="preference").exists()
