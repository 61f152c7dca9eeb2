"""Admission (docs/design.md, Memory classes and Lifecycle): an enterprise rule needs N
distinct approvals (the tenant's setting, 2 here), none of them the proposer's; an
approval never carries over to changed content; named reviewers must all decide; a
tenant-wide rule needs the tenant-wide permission. Then the gate checks activate it."""

from __future__ import annotations

from approvals.models import Approval
from memory.models import Status
from tests.approvals.support import Flow, head, person


def test_one_approval_of_two_keeps_a_rule_pending_and_unused(flow: Flow):
    memory = flow.rule()

    after_one = flow.approve(memory["id"], "rita")

    assert after_one["status"] == "pending_review"
    assert after_one["approvals_required"] == 2
    assert after_one["verification"] == "asserted"
    assert flow.resolved_ids({"project": "P-9"}) == []


def test_the_second_distinct_approval_moves_the_rule_to_checking_then_active(
    flow: Flow, django_capture_on_commit_callbacks
):
    memory = flow.rule()
    flow.approve(memory["id"], "rita")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = flow.uncommitted("omar", f"/memories/{memory['id']}/approve")
    assert response.json()["status"] == "checking"
    assert head(memory["id"]).status == Status.CHECKING
    assert flow.resolved_ids({"project": "P-9"}) == []  # checking is not in use yet

    with django_capture_on_commit_callbacks(execute=True):
        for callback in callbacks:  # the commit hands the gate run to Celery (eager here)
            callback()

    active = flow.memory(memory["id"])
    assert (active["status"], active["active_version"]) == ("active", 1)
    assert active["checks"] == {
        "status": "passed",
        "passed": 5,
        "failed": 0,
        "total": 5,
        "run": "gate",
        "ran_at": active["checks"]["ran_at"],
    }
    assert active["activated_at"] is not None
    assert flow.resolved_ids({"project": "P-9"}) == [memory["id"]]


def test_a_repeated_approval_is_a_conflict_and_counts_once(flow: Flow):
    memory = flow.rule()
    flow.approve(memory["id"], "rita")

    again = flow.post("rita", f"/memories/{memory['id']}/approve", {"comment": "me again"})

    assert again.status_code == 409
    still = flow.memory(memory["id"])
    assert (still["status"], [a["reviewer"] for a in still["approvals"]]) == (
        "pending_review",
        ["rita"],
    )
    assert flow.approve(memory["id"], "lena")["status"] == "checking"


def test_the_proposer_never_counts_not_even_a_superuser(flow: Flow):
    rita = flow.world.users["rita"]
    rita.is_superuser = rita.is_staff = True
    rita.save()
    memory = flow.rule(who="rita")

    refused = flow.post("rita", f"/memories/{memory['id']}/approve", {})

    assert refused.status_code == 403
    assert Approval.objects.count() == 0
    assert flow.approve(memory["id"], "omar")["status"] == "pending_review"
    assert flow.approve(memory["id"], "lena")["status"] == "checking"
    assert flow.memory(memory["id"])["status"] == "active"


def test_a_correction_of_an_approved_proposal_needs_new_approvals(flow: Flow):
    memory = flow.rule()
    flow.approve(memory["id"], "rita")
    correction = {"value": "follow exception APR-2291 v4", "statement": "v4 of the exception."}

    v2 = flow.correct(memory["id"], 1, **correction)

    assert (v2["version"], v2["status"], v2["approvals"]) == (2, "pending_review", [])
    v1 = flow.ok(flow.get("rita", f"/memories/{memory['id']}/versions/1"))
    assert v1["status"] == "superseded"
    # lena's is the first approval of version 2: rita's approval of version 1 is not carried.
    assert flow.approve(memory["id"], "lena")["status"] == "pending_review"
    assert flow.approve(memory["id"], "rita")["status"] == "checking"
    active = flow.memory(memory["id"])
    assert (active["version"], active["status"], active["value"]) == (
        2,
        "active",
        "follow exception APR-2291 v4",
    )


def test_an_active_rule_stays_in_use_until_its_correction_is_approved_and_checked(flow: Flow):
    memory = flow.active_rule()
    correction = {"value": "follow exception APR-2291 v4"}

    flow.correct(memory["id"], 1, **correction)

    [fact] = flow.resolve({"project": "P-9"})["facts"]
    assert (fact["version"], fact["value"], fact["pending_correction"]) == (
        1,
        memory["value"],
        True,
    )
    assert flow.approve(memory["id"], "omar")["status"] == "pending_review"
    flow.approve(memory["id"], "lena")
    [fact] = flow.resolve({"project": "P-9"})["facts"]
    assert (fact["version"], fact["value"], fact["pending_correction"]) == (
        2,
        "follow exception APR-2291 v4",
        False,
    )
    versions = flow.ok(flow.get("rita", f"/memories/{memory['id']}/versions"))
    assert [(v["version"], v["status"]) for v in versions] == [(1, "superseded"), (2, "active")]
    assert versions[0]["deactivated_at"] == versions[1]["activated_at"]


def test_every_named_reviewer_must_approve_even_when_the_count_is_reached(flow: Flow):
    memory = flow.rule(required_reviewers=["lena"])

    after_two = flow.approve(memory["id"], "rita", "omar")

    assert after_two["status"] == "pending_review"
    assert flow.approve(memory["id"], "lena")["status"] == "checking"
    assert flow.memory(memory["id"])["status"] == "active"


def test_a_tenant_wide_rule_needs_the_tenant_wide_permission(flow: Flow):
    person(flow.world, "tina", "review_enterprise_rule")  # reviews rules, not tenant-wide ones
    tenant_wide = flow.rule({"tenant": "*"})
    for_p9 = flow.rule({"project": "P-9"})

    refused = flow.post("tina", f"/memories/{tenant_wide['id']}/approve", {})
    allowed = flow.post("tina", f"/memories/{for_p9['id']}/approve", {})

    assert refused.status_code == 403
    assert flow.memory(tenant_wide["id"])["approvals"] == []
    assert allowed.status_code == 200
    assert flow.approve(tenant_wide["id"], "rita", "lena")["status"] == "checking"
    assert flow.memory(tenant_wide["id"])["status"] == "active"


def test_approval_backed_by_an_approval_record_makes_the_rule_confirmed(flow: Flow):
    memory = flow.active_rule(sources=[flow.source("approval_record")])

    assert memory["verification"] == "confirmed"
    [fact] = flow.resolve({"project": "P-9"})["facts"]
    assert fact["verification"] == "confirmed"


def test_approval_backed_by_a_business_record_makes_the_fact_verified_record(flow: Flow):
    order = flow.source("business_record", content="PO-7731: renewal-3 of P-9 approved.")
    memory = flow.propose("task_fact", {"task": "renewal-3", "project": "P-9"}, sources=[order])
    assert memory["verification"] == "asserted"

    flow.approve(memory["id"], "omar")  # a task fact needs one reviewer of its scope

    active = flow.memory(memory["id"])
    assert (active["status"], active["verification"]) == ("active", "verified_record")


def test_a_preference_needs_no_approval_but_is_still_checked(flow: Flow):
    memory = flow.propose("preference", {}, owner="nora", value="tables", field="report_format")

    after = flow.memory(memory["id"])

    assert (after["status"], after["verification"], after["approvals"]) == (
        "active",
        "asserted",
        [],
    )
    assert after["checks"]["status"] == "passed"
