"""POST /memories: every proposal rule of docs/api.md is a 422 naming its field, and nothing is
written; a valid proposal starts in the status its class requires (seed 001: a single
correction must not silently become long-term memory)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from core.models import Outbox
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


@dataclass
class Evidence:
    """Dana (a customer) and Northwind (a supplier) with the sources an agent would cite."""

    dana: str
    northwind: str
    message: str
    order: str
    approval: str
    document: str
    legal_only: str
    revoked: str
    other_tenant_source: str
    other_tenant_entity: str


@pytest.fixture
def ev(world) -> Evidence:
    agent, rita, zed = world.client("agent"), world.client("rita"), world.client("zed")
    revoked = record_source(agent, "approval_record", "APR-1000 v1 (withdrawn).")
    response = rita.post(f"/api/v1/sources/{revoked}/revoke", {"reason": "withdrawn"}, "json")
    assert response.status_code == 200
    return Evidence(
        dana=create_entity(agent, "Dana Kim"),
        northwind=create_entity(agent, "Northwind Metals", "supplier"),
        message=record_source(agent, "message", "I normally want deliveries at home."),
        order=record_source(agent, "business_record", "Order order-a: deliver to the office."),
        approval=record_source(agent, "approval_record", "APR-2291 v3: P-9 renewal exception."),
        document=record_source(agent, "document", "Procurement handbook, chapter 4."),
        legal_only=record_source(
            rita, "approval_record", "APR-7 (legal only).", visibility=["legal"]
        ),
        revoked=revoked,
        other_tenant_source=record_source(zed, "business_record", "Globex order 1."),
        other_tenant_entity=create_entity(zed, "Dana Kim"),
    )


def _without(body: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != key}


Case = Callable[[Evidence], dict[str, Any]]

REFUSED: list[tuple[str, Case, str]] = [
    # scope: dimensions match ^[a-z][a-z0-9_]{0,31}$, values are non-empty strings
    (
        "dimension_with_capital",
        lambda e: task_fact_body(e.dana, e.order, scope={"task": "order-a", "Project": "P-9"}),
        "scope",
    ),
    (
        "dimension_starting_with_digit",
        lambda e: task_fact_body(e.dana, e.order, scope={"task": "order-a", "9lives": "x"}),
        "scope",
    ),
    (
        "dimension_of_33_characters",
        lambda e: task_fact_body(e.dana, e.order, scope={"task": "order-a", "a" * 33: "x"}),
        "scope",
    ),
    (
        "empty_dimension",
        lambda e: task_fact_body(e.dana, e.order, scope={"task": "order-a", "": "x"}),
        "scope",
    ),
    ("empty_value", lambda e: task_fact_body(e.dana, e.order, scope={"task": ""}), "scope"),
    ("blank_value", lambda e: task_fact_body(e.dana, e.order, scope={"task": "   "}), "scope"),
    ("number_value", lambda e: task_fact_body(e.dana, e.order, scope={"task": 7}), "scope"),
    # PostgreSQL refused a value over its column as a 500 (issue 44); SQLite stored it.
    (
        "value_of_201_characters",
        lambda e: task_fact_body(e.dana, e.order, scope={"task": "order-a", "project": "P" * 201}),
        "scope",
    ),
    ("null_value", lambda e: task_fact_body(e.dana, e.order, scope={"task": None}), "scope"),
    ("object_value", lambda e: task_fact_body(e.dana, e.order, scope={"task": {"a": 1}}), "scope"),
    # task_fact needs a task; enterprise_rule needs a dimension; tenant-wide is exact
    (
        "task_fact_without_task",
        lambda e: task_fact_body(e.dana, e.order, scope={"project": "P-9"}),
        "scope",
    ),
    ("task_fact_with_empty_scope", lambda e: task_fact_body(e.dana, e.order, scope={}), "scope"),
    ("rule_with_empty_scope", lambda e: rule_body(e.northwind, e.approval, scope={}), "scope"),
    (
        "tenant_wide_plus_a_dimension",
        lambda e: rule_body(e.northwind, e.approval, scope={"tenant": "*", "project": "P-9"}),
        "scope",
    ),
    (
        "tenant_named_instead_of_star",
        lambda e: rule_body(e.northwind, e.approval, scope={"tenant": "acme"}),
        "scope",
    ),
    # a preference is not reviewed: its scope is {} or only a task (issue 9, review bypass)
    (
        "preference_with_a_business_scope",
        lambda e: preference_body(
            e.dana, e.message, scope={"project": "P-9", "supplier": "S-17", "batch": "B-3"}
        ),
        "scope",
    ),
    (
        "preference_scoped_to_a_channel",
        lambda e: preference_body(e.dana, e.message, scope={"channel": "web"}),
        "scope",
    ),
    (
        "preference_with_a_task_and_a_project",
        lambda e: preference_body(e.dana, e.message, scope={"task": "t-1", "project": "P-9"}),
        "scope",
    ),
    # owner: a user of this tenant
    ("unknown_owner", lambda e: preference_body(e.dana, e.message, owner="nobody"), "owner"),
    ("owner_of_other_tenant", lambda e: preference_body(e.dana, e.message, owner="zed"), "owner"),
    ("missing_owner", lambda e: _without(preference_body(e.dana, e.message), "owner"), "owner"),
    # expires_at: the key is required, null only for a preference, and in the future
    (
        "preference_without_expires_at_key",
        lambda e: _without(preference_body(e.dana, e.message), "expires_at"),
        "expires_at",
    ),
    (
        "task_fact_without_expires_at_key",
        lambda e: _without(task_fact_body(e.dana, e.order), "expires_at"),
        "expires_at",
    ),
    (
        "task_fact_never_expiring",
        lambda e: task_fact_body(e.dana, e.order, expires_at=None),
        "expires_at",
    ),
    (
        "rule_never_expiring",
        lambda e: rule_body(e.northwind, e.approval, expires_at=None),
        "expires_at",
    ),
    (
        "expiry_in_the_past",
        lambda e: task_fact_body(e.dana, e.order, expires_at=iso(later(-1))),
        "expires_at",
    ),
    (
        "expiry_without_zone",
        lambda e: task_fact_body(e.dana, e.order, expires_at="2099-01-01T00:00:00"),
        "expires_at",
    ),
    # valid time: valid_from <= valid_to
    (
        "valid_to_before_valid_from",
        lambda e: preference_body(
            e.dana, e.message, valid_from=iso(later(10)), valid_to=iso(later(5))
        ),
        "valid_to",
    ),
    (
        "valid_from_at_the_first_representable_day",
        lambda e: preference_body(e.dana, e.message, valid_from="0001-01-01T00:00:00Z"),
        "valid_from",
    ),
    (
        "valid_to_at_the_last_representable_day",
        lambda e: preference_body(e.dana, e.message, valid_to="9999-12-31T23:59:59Z"),
        "valid_to",
    ),
    # sources: in the tenant, visible to the caller, not revoked
    (
        "unknown_source",
        lambda e: preference_body(e.dana, "src_does_not_exist"),
        "sources",
    ),
    (
        "source_of_other_tenant",
        lambda e: preference_body(e.dana, e.other_tenant_source),
        "sources",
    ),
    (
        "source_the_agent_may_not_see",
        lambda e: task_fact_body(e.dana, e.order, sources=[e.order, e.legal_only]),
        "sources",
    ),
    ("revoked_source", lambda e: rule_body(e.northwind, e.revoked), "sources"),
    # evidence: task_fact and enterprise_rule cite a business or approval record
    (
        "task_fact_citing_only_a_message",
        lambda e: task_fact_body(e.dana, e.message),
        "sources",
    ),
    ("task_fact_citing_nothing", lambda e: task_fact_body(e.dana, e.order, sources=[]), "sources"),
    ("rule_citing_only_a_document", lambda e: rule_body(e.northwind, e.document), "sources"),
    # the caller never sets verification (nor any system-managed member)
    (
        "verification_set_by_caller",
        lambda e: task_fact_body(e.dana, e.order, verification="verified_record"),
        "verification",
    ),
    (
        "verification_asserted_by_caller",
        lambda e: preference_body(e.dana, e.message, verification="asserted"),
        "verification",
    ),
    (
        "status_set_by_caller",
        lambda e: preference_body(e.dana, e.message, status="active"),
        "status",
    ),
    # value: at most 8 KiB of JSON ("x" * 8191 is 8193 bytes with its quotes)
    (
        "value_over_8_kib",
        lambda e: preference_body(e.dana, e.message, value="x" * 8191),
        "value",
    ),
    # subject xor subject_mention
    (
        "subject_and_mention",
        lambda e: preference_body(e.dana, e.message, subject_mention="Dana"),
        "subject",
    ),
    (
        "neither_subject_nor_mention",
        lambda e: _without(preference_body(e.dana, e.message), "subject"),
        "subject",
    ),
    (
        "subject_of_other_tenant",
        lambda e: preference_body(e.other_tenant_entity, e.message),
        "subject",
    ),
    # wrong JSON types are 422, never 500
    ("scope_as_list", lambda e: preference_body(e.dana, e.message, scope=["task"]), "scope"),
    ("scope_as_string", lambda e: preference_body(e.dana, e.message, scope="task"), "scope"),
    (
        "sources_as_string",
        lambda e: preference_body(e.dana, e.message, sources=e.message),
        "sources",
    ),
    (
        "source_id_as_object",
        lambda e: preference_body(e.dana, e.message, sources=[{"id": e.message}]),
        "sources",
    ),
    ("expires_at_as_number", lambda e: task_fact_body(e.dana, e.order, expires_at=5), "expires_at"),
    (
        "statement_as_object",
        lambda e: preference_body(e.dana, e.message, statement={"text": "x"}),
        "statement",
    ),
    ("field_as_number", lambda e: preference_body(e.dana, e.message, field=12), "field"),
    ("unknown_kind", lambda e: preference_body(e.dana, e.message, kind="rumour"), "kind"),
    ("kind_as_list", lambda e: preference_body(e.dana, e.message, kind=["preference"]), "kind"),
    (
        "assertion_unknown",
        lambda e: preference_body(e.dana, e.message, assertion="hope"),
        "assertion",
    ),
    ("basis_as_list", lambda e: preference_body(e.dana, e.message, basis=["APR"]), "basis"),
    (
        "visibility_as_string",
        lambda e: preference_body(e.dana, e.message, visibility="staff"),
        "visibility",
    ),
    (
        "scenarios_as_object",
        lambda e: preference_body(e.dana, e.message, scenarios={"kind": "applicable"}),
        "scenarios",
    ),
    (
        "scenario_with_unknown_expectation",
        lambda e: preference_body(
            e.dana, e.message, scenarios=[{"kind": "applicable", "expect": "maybe"}]
        ),
        "scenarios",
    ),
]


# Each rule of docs/api.md, with the cases that break it (ids from REFUSED above).
RULES = {
    "scope_dimensions_match_the_pattern": [
        "dimension_with_capital", "dimension_starting_with_digit",
        "dimension_of_33_characters", "empty_dimension",
    ],
    "scope_values_are_non_empty_strings": [
        "empty_value", "blank_value", "number_value", "null_value", "object_value",
    ],
    "scope_values_are_at_most_200_characters": ["value_of_201_characters"],
    "a_task_facts_scope_names_a_task": ["task_fact_without_task", "task_fact_with_empty_scope"],
    "a_rules_scope_is_non_empty_and_tenant_wide_is_exactly_star": [
        "rule_with_empty_scope", "tenant_wide_plus_a_dimension", "tenant_named_instead_of_star",
    ],
    "a_preferences_scope_is_empty_or_names_only_a_task": [
        "preference_with_a_business_scope", "preference_scoped_to_a_channel",
        "preference_with_a_task_and_a_project",
    ],
    "the_owner_is_a_user_of_this_tenant": [
        "unknown_owner", "owner_of_other_tenant", "missing_owner",
    ],
    "expires_at_is_given_in_the_future_and_null_only_for_a_preference": [
        "preference_without_expires_at_key", "task_fact_without_expires_at_key",
        "task_fact_never_expiring", "rule_never_expiring", "expiry_in_the_past",
        "expiry_without_zone",
    ],
    "valid_time_is_an_ordered_interval_checks_can_step_outside_of": [
        "valid_to_before_valid_from", "valid_from_at_the_first_representable_day",
        "valid_to_at_the_last_representable_day",
    ],
    "sources_are_in_the_tenant_visible_and_not_revoked": [
        "unknown_source", "source_of_other_tenant", "source_the_agent_may_not_see",
        "revoked_source",
    ],
    "facts_and_rules_cite_a_business_or_approval_record": [
        "task_fact_citing_only_a_message", "task_fact_citing_nothing",
        "rule_citing_only_a_document",
    ],
    "the_caller_never_sets_verification_or_status": [
        "verification_set_by_caller", "verification_asserted_by_caller", "status_set_by_caller",
    ],
    "the_value_is_at_most_8_kib": ["value_over_8_kib"],
    "exactly_one_of_subject_or_subject_mention_names_a_subject_of_the_tenant": [
        "subject_and_mention", "neither_subject_nor_mention", "subject_of_other_tenant",
    ],
    "wrong_json_types_are_422_never_500": [
        "scope_as_list", "scope_as_string", "sources_as_string", "source_id_as_object",
        "expires_at_as_number", "statement_as_object", "field_as_number", "unknown_kind",
        "kind_as_list", "assertion_unknown", "basis_as_list", "visibility_as_string",
        "scenarios_as_object", "scenario_with_unknown_expectation",
    ],
}  # fmt: skip
CASES = {name: (case, field) for name, case, field in REFUSED}


def test_every_refused_case_belongs_to_a_rule():
    grouped = [name for names in RULES.values() for name in names]
    assert sorted(grouped) == sorted(CASES)


@pytest.mark.parametrize("rule", list(RULES))
def test_a_proposal_breaking_a_rule_is_a_422_naming_the_field_and_writes_nothing(
    world, ev, rule: str
):
    agent = world.client("agent")
    for name in RULES[rule]:
        case, field = CASES[name]
        given = Written.now()

        response = agent.post("/api/v1/memories", case(ev), "json")

        body = assert_problem(response, 422)
        named = [
            k for k in body["errors"] if k == field or k.startswith((f"{field}.", f"{field}["))
        ]
        assert named, (name, body)
        assert Written.now() == given, name


def test_every_broken_rule_is_named_in_one_answer(world, ev):
    body = task_fact_body(
        ev.dana, ev.message, scope={"project": "P-9"}, owner="nobody", expires_at=None
    )

    response = world.client("agent").post("/api/v1/memories", body, "json")

    problem = assert_problem(response, 422)
    assert sorted(problem["errors"]) == ["expires_at", "owner", "scope", "sources"]


def test_a_rule_citing_a_revoked_approval_is_told_that_and_nothing_untrue(world, ev):
    response = world.client("agent").post(
        "/api/v1/memories", rule_body(ev.northwind, ev.revoked), "json"
    )

    problem = assert_problem(response, 422)
    assert problem["errors"]["sources"] == [f"source {ev.revoked!r} is revoked"]


def test_a_body_that_is_not_a_json_object_is_a_422(world):
    response = world.client("agent").post("/api/v1/memories", ["kind", "preference"], "json")

    assert assert_problem(response, 422, "request")["errors"]["request"] == [
        "the body must be a JSON object"
    ]


ALLOWED: list[tuple[str, Case, str]] = [
    (
        "preference_with_empty_scope_and_no_expiry",
        lambda e: preference_body(e.dana, e.message),
        "checking",
    ),
    (
        "preference_scoped_to_a_task",
        lambda e: preference_body(e.dana, e.message, scope={"task": "order-a"}),
        "checking",
    ),
    (
        "dimension_of_32_characters",
        lambda e: task_fact_body(e.dana, e.order, scope={"task": "order-a", "a" * 32: "x"}),
        "pending_review",
    ),
    ("task_fact_backed_by_order", lambda e: task_fact_body(e.dana, e.order), "pending_review"),
    (
        "task_fact_backed_by_approval",
        lambda e: task_fact_body(e.dana, e.approval),
        "pending_review",
    ),
    ("rule_for_project_p9", lambda e: rule_body(e.northwind, e.approval), "pending_review"),
    (
        "rule_tenant_wide",
        lambda e: rule_body(e.northwind, e.order, scope={"tenant": "*"}),
        "pending_review",
    ),
    (
        "valid_from_equal_to_valid_to",
        lambda e: preference_body(
            e.dana, e.message, valid_from="2026-03-01T00:00:00Z", valid_to="2026-03-01T00:00:00Z"
        ),
        "checking",
    ),
    (
        "value_of_exactly_8_kib",
        lambda e: preference_body(e.dana, e.message, value="x" * 8190),
        "checking",
    ),
    (
        "mention_instead_of_subject",
        lambda e: _without(preference_body(e.dana, e.message, subject_mention="D. Kim"), "subject"),
        "held_unresolved",
    ),
    (
        "mention_with_null_subject",
        lambda e: task_fact_body(None, e.order, subject_mention="Dana from the call"),  # type: ignore[arg-type]
        "held_unresolved",
    ),
]


@pytest.mark.parametrize(
    ("case", "status"), [(c, s) for _, c, s in ALLOWED], ids=[i for i, _, _ in ALLOWED]
)
def test_a_valid_proposal_is_recorded_as_version_1_in_its_starting_status(
    world, ev, case: Case, status: str
):
    given = Written.now()

    response = world.client("agent").post("/api/v1/memories", case(ev), "json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == status
    assert body["version"] == 1
    assert body["active_version"] is None
    assert body["verification"] == "asserted"
    assert body["proposed_by"] == "agent:bot"
    assert response["ETag"] == '"1"'
    now = Written.now()
    assert (now.items, now.versions) == (given.items + 1, given.versions + 1)
    assert now.events == given.events + 1  # memory.proposed, in the same transaction


def test_proposal_representation_carries_what_was_proposed(world, ev):
    body = task_fact_body(ev.dana, ev.order, valid_from="2026-03-01T09:00:00+02:00")

    response = world.client("agent").post("/api/v1/memories", body, "json")

    memory = response.json()
    assert memory["id"].startswith("mem_")
    assert memory["kind"] == "task_fact"
    assert memory["subject"] == ev.dana
    assert memory["field"] == "delivery_address"
    assert memory["value"] == "4 Dock Road"
    assert memory["scope"] == {"task": "order-a"}
    assert memory["owner"] == "rita"
    assert memory["sources"] == [ev.order]
    assert memory["basis"] == {"ref": "ORD-A", "version": "2"}
    assert memory["valid_from"] == "2026-03-01T07:00:00Z"
    assert memory["valid_to"] is None
    assert memory["visibility"] == ["*"]
    assert memory["assertion"] == "state"
    assert memory["approvals"] == []
    assert memory["approvals_required"] == 1
    assert memory["activated_at"] is None


def test_enterprise_rule_needs_the_tenants_number_of_approvals(world, ev):
    response = world.client("agent").post(
        "/api/v1/memories", rule_body(ev.northwind, ev.approval), "json"
    )

    assert response.json()["approvals_required"] == 2


def test_a_preference_stays_checking_in_the_answer_and_its_gate_runs_after_commit(
    world, ev, django_capture_on_commit_callbacks
):
    """The gate check is enqueued with ``on_commit``: the 201 is built inside the test's
    transaction, so it says ``checking``; once the commit callbacks run (eager Celery here,
    a worker in production) the same preference is ``active``."""
    agent = world.client("agent")
    with django_capture_on_commit_callbacks() as callbacks:
        response = agent.post("/api/v1/memories", preference_body(ev.dana, ev.message), "json")
    assert response.json()["status"] == "checking"
    assert len(callbacks) == 1  # run_gate_checks, nothing else for a preference

    with django_capture_on_commit_callbacks(execute=True):
        callbacks[0]()

    after = agent.get(f"/api/v1/memories/{response.json()['id']}").json()
    assert after["status"] == "active"
    assert after["active_version"] == 1
    assert after["checks"]["status"] == "passed"
    assert after["checks"]["failed"] == 0


@pytest.mark.django_db(transaction=True)
def test_with_eager_celery_and_a_real_commit_the_201_already_shows_it_active(world):
    """What really happens with ``task_always_eager`` (tests, and any deployment without a
    worker queue): the gate runs in ``on_commit`` when the proposal's transaction commits,
    which is before the view reads the head back, so the 201 says ``active``. With a
    worker the same 201 says ``checking``, as docs/api.md describes."""
    agent = world.client("agent")
    dana = create_entity(agent, "Dana Kim")
    chat = record_source(agent, "message", "I normally want deliveries at home.")

    response = agent.post("/api/v1/memories", preference_body(dana, chat), "json")

    assert response.status_code == 201
    assert (response.json()["status"], response.json()["active_version"]) == ("active", 1)
    version = MemoryVersion.objects.get(item_id=response.json()["id"])
    assert version.activated_at is not None
    assert version.recorded_at < version.activated_at


def test_a_preference_whose_commit_callbacks_never_ran_is_still_checking(world, ev):
    """Without the commit (a crash between commit and enqueue) nothing activates it: the
    sweeper re-enqueues versions stuck in ``checking``."""
    agent = world.client("agent")
    memory = agent.post("/api/v1/memories", preference_body(ev.dana, ev.message), "json").json()

    assert agent.get(f"/api/v1/memories/{memory['id']}").json()["status"] == "checking"
    assert MemoryVersion.objects.get(item_id=memory["id"]).activated_at is None


def test_a_task_fact_waits_for_review_with_a_preview_and_a_notice(
    world, ev, django_capture_on_commit_callbacks
):
    agent = world.client("agent")
    with django_capture_on_commit_callbacks() as callbacks:
        response = agent.post("/api/v1/memories", task_fact_body(ev.dana, ev.order), "json")
    # preview checks, the reviewers' notice and the webhooks' memory.pending_review
    assert len(callbacks) == 3

    with django_capture_on_commit_callbacks(execute=True):
        for callback in callbacks:
            callback()

    assert [m.to for m in mail.outbox] == [["rita@example.com"]]
    after = agent.get(f"/api/v1/memories/{response.json()['id']}").json()
    assert after["status"] == "pending_review"
    assert after["checks"]["status"] == "passed"
    assert after["checks"]["total"] > 0


def test_a_mention_is_held_without_checks_until_a_reviewer_links_it(
    world, ev, django_capture_on_commit_callbacks
):
    body = _without(preference_body(ev.dana, ev.message, subject_mention="D. Kim"), "subject")
    before = Outbox.objects.count()  # the fixture's own revocation announced itself
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client("agent").post("/api/v1/memories", body, "json")

    memory = response.json()
    # No checks, no webhook event: only the reviewers are told it needs a subject (issue 15).
    after = Outbox.objects.order_by("pk").values_list("kind", flat=True)[before:]
    assert list(after) == ["notify.held_mention"]
    assert memory["status"] == "held_unresolved"
    assert memory["subject"] is None
    assert memory["subject_mention"] == "D. Kim"


def test_a_proposal_expiring_a_second_from_now_is_still_in_the_future(world, ev):
    body = task_fact_body(ev.dana, ev.order, expires_at=iso(timezone.now() + timedelta(minutes=1)))

    response = world.client("agent").post("/api/v1/memories", body, "json")

    assert response.status_code == 201


def test_the_proposer_may_narrow_but_the_version_keeps_every_sources_labels(world, ev):
    rita = world.client("rita")
    staff_only = record_source(rita, "business_record", "Order order-b.", visibility=["staff"])
    body = task_fact_body(ev.dana, staff_only, visibility=["staff"])

    response = rita.post("/api/v1/memories", body, "json")

    assert response.status_code == 201
    version = MemoryVersion.objects.get(item_id=response.json()["id"])
    assert version.required_visibility == [["staff"], ["staff"]]


@pytest.mark.parametrize("member", ["value", "basis"])
def test_a_number_beyond_double_range_is_a_422_not_a_500(world, ev, member: str):
    """``1e400`` is valid JSON syntax, but no JSON document could give it back."""
    placeholder = {"value": "PLACEHOLDER", "basis": {"ref": "PLACEHOLDER"}}[member]
    body = json.dumps(preference_body(ev.dana, ev.message, **{member: placeholder}))
    for raw_number in ("1e400", "-1e400"):
        given = Written.now()

        response = world.client("agent").post(
            "/api/v1/memories",
            body.replace('"PLACEHOLDER"', raw_number),
            content_type="application/json",
        )

        problem = assert_problem(response, 422)
        assert any(name.startswith(member) for name in problem["errors"]), problem
        assert Written.now() == given


def test_a_big_integer_is_a_json_value_like_any_other(world, ev):
    body = preference_body(ev.dana, ev.message, value=10**40)

    response = world.client("agent").post("/api/v1/memories", body, "json")

    assert response.status_code == 201
    assert response.json()["value"] == 10**40


def test_the_widest_valid_interval_still_passes_its_checks(
    world, ev, django_capture_on_commit_callbacks
):
    """Checks probe a day before ``valid_from`` and after ``valid_to``; at the accepted
    limits that day exists, so the preference is checked and activated, not stuck."""
    body = preference_body(
        ev.dana, ev.message, valid_from="0001-01-03T00:00:00Z", valid_to="9999-12-29T00:00:00Z"
    )
    agent = world.client("agent")
    with django_capture_on_commit_callbacks(execute=True):
        memory = agent.post("/api/v1/memories", body, "json").json()

    assert agent.get(f"/api/v1/memories/{memory['id']}").json()["status"] == "active"


@pytest.mark.parametrize(
    ("member", "value", "named"),
    [
        ("value", "12 Elm\x00Street", "value"),
        ("value", {"street": ["12 Elm", "\x00"]}, "value.street.1"),
        ("basis", {"ref": "APR\x00"}, "basis.ref"),
        ("scope", {"task": "we\x00b"}, "scope.task"),
        ("statement", "Dana\x00", "statement"),
    ],
)
def test_a_nul_character_anywhere_in_a_proposal_is_a_422_naming_it(
    world, ev, member: str, value: object, named: str
):
    """PostgreSQL's text and jsonb cannot hold NUL: refused up front on every database."""
    given = Written.now()

    response = world.client("agent").post(
        "/api/v1/memories", preference_body(ev.dana, ev.message, **{member: value}), "json"
    )

    assert_problem(response, 422, named)
    assert Written.now() == given
