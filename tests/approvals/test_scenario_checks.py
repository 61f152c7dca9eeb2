"""Scenario checks before activation (docs/design.md, Scenario checks; seed 001: test the
cases where the memory must be used, the similar-looking ones where it must not, and the
ones where its basis was revoked). All must pass; a failure keeps the item out of use."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from django.core import mail
from django.utils import timezone

from approvals import checking, tasks
from approvals import checks as scenario_checks
from approvals.models import CheckResult
from memory.models import Source, Status
from memory.selectors import current_policy, resolver_policy
from tests.approvals.support import Flow, head
from tests.conftest import iso

NOT = "does_not_apply"
TENANT = {"tenant": "*"}
TOO_BROAD = {"kind": "inapplicable", "context": {"project": "P-9"}, "expect": "does_not_apply"}


def gate_results(memory_id: str) -> dict[str, tuple[str, str]]:
    """scenario name → (outcome, detail) of the head version's gate run."""
    rows = CheckResult.objects.filter(version=head(memory_id), run=CheckResult.Run.GATE)
    return {r.scenario["name"]: (r.outcome, r.detail) for r in rows}


def test_a_failing_custom_scenario_keeps_the_rule_out_of_use(flow: Flow):
    # Given a reviewer's real case: a renewal of P-9 outside batch renewal-3 must not
    # follow the exception; the rule as proposed covers all of P-9.
    memory = flow.rule({"project": "P-9"}, scenarios=[TOO_BROAD])

    flow.approve(memory["id"], "rita", "lena")

    failed = flow.memory(memory["id"])
    assert failed["status"] == "checks_failed"
    assert failed["checks"] == {
        "status": "failed",
        "passed": 5,
        "failed": 1,
        "total": 6,
        "run": "gate",
        "ran_at": failed["checks"]["ran_at"],
    }
    [(name, detail)] = [
        (name, detail)
        for name, (outcome, detail) in gate_results(memory["id"]).items()
        if outcome == "failed"
    ]
    assert name.startswith("custom #")
    assert detail.startswith("selected (expected does not apply)")
    assert flow.resolved_ids({"project": "P-9"}) == []
    told = {m.to[0]: m.subject for m in mail.outbox if "did not take effect" in m.subject}
    told |= {m.to[0]: m.subject for m in mail.outbox if m.subject.startswith("[Memgov] Checks")}
    # The owner (who also approved) and the other approver, each once, by the statement.
    assert told == {
        "rita@example.com": "[Memgov] Checks failed: “Renewals follow exception APR-2291.”",
        "lena@example.com": (
            "[Memgov] Your approval did not take effect: “Renewals follow exception APR-2291.”"
        ),
    }


def test_a_recheck_after_adding_a_scenario_runs_the_gate_again_with_it(
    flow: Flow, django_capture_on_commit_callbacks
):
    memory = flow.rule({"project": "P-9"}, scenarios=[TOO_BROAD])
    flow.approve(memory["id"], "rita", "lena")
    p10 = {"kind": "inapplicable", "context": {"project": "P-10"}, "expect": "does_not_apply"}
    added = flow.post("omar", f"/memories/{memory['id']}/scenarios", p10)
    assert added.status_code == 201
    assert added.json()["created_by"] == "user:omar"

    with django_capture_on_commit_callbacks(execute=True):
        response = flow.uncommitted("rita", f"/memories/{memory['id']}/recheck")

    assert response.status_code == 200
    assert response.json()["status"] == "checking"
    # The first run's six rows are rewritten, the new scenario adds one: never a second set.
    results = gate_results(memory["id"])
    assert CheckResult.objects.filter(version=head(memory["id"]), run="gate").count() == 7
    assert [o for n, (o, _) in results.items() if n.startswith("custom #")] == ["failed", "passed"]
    assert flow.memory(memory["id"])["checks"]["total"] == 7
    assert flow.memory(memory["id"])["status"] == "checks_failed"  # the real case still fails


def test_a_correction_narrowing_the_scope_fixes_what_the_scenario_found(flow: Flow):
    memory = flow.rule({"project": "P-9"}, scenarios=[TOO_BROAD])
    flow.approve(memory["id"], "rita", "lena")
    narrower = {"scope": {"project": "P-9", "task": "renewal-3"}}

    flow.correct(memory["id"], 1, **narrower)
    flow.approve(memory["id"], "rita", "lena")

    fixed = flow.memory(memory["id"])
    assert (fixed["version"], fixed["status"]) == (2, "active")
    assert fixed["checks"]["failed"] == 0
    assert flow.resolved_ids({"project": "P-9", "task": "renewal-3"}) == [memory["id"]]
    assert flow.resolved_ids({"project": "P-9", "task": "renewal-7"}) == []


def test_a_recheck_after_the_conflict_is_fixed_activates_the_rule(flow: Flow):
    old = flow.active_rule({"project": "P-9"}, value="check every delivery")
    new = flow.rule({"project": "P-9"})
    flow.approve(new["id"], "rita", "lena")
    assert flow.memory(new["id"])["status"] == "checks_failed"
    flow.ok(flow.retire(old["id"]))  # the fix: the contradicting rule is retired

    response = flow.post("omar", f"/memories/{new['id']}/recheck")

    assert response.json()["status"] == "checking"
    assert flow.memory(new["id"])["status"] == "active"
    assert flow.resolved_ids({"project": "P-9"}) == [new["id"]]


def test_generated_scenarios_cover_scope_siblings_subject_tenant_time_and_revocation(flow: Flow):
    # Given the tenant has seen project P-10 and supplier S-18 (another proposal's scope).
    flow.rule({"project": "P-10", "supplier": "S-18"})
    start = timezone.now() - timedelta(days=10)
    memory = flow.rule(
        {"project": "P-9", "supplier": "S-17", "batch": "B-3"}, valid_from=iso(start)
    )

    flow.approve(memory["id"], "rita", "lena")

    checks = flow.ok(flow.get("rita", f"/memories/{memory['id']}/checks"))
    gate = [c for c in checks if c["run"] == "gate"]
    own = {"project": "P-9", "supplier": "S-17", "batch": "B-3"}
    assert [
        (c["scenario"]["name"], c["scenario"]["context"], c["scenario"]["expect"], c["outcome"])
        for c in gate
    ] == [
        ("applicable: its own scope", own, "applies", "passed"),
        # No other batch was ever seen in the tenant: a made-up sibling.
        ("inapplicable: batch moved to a sibling", {**own, "batch": "B-3~other"}, NOT, "passed"),
        ("inapplicable: project moved to a sibling", {**own, "project": "P-10"}, NOT, "passed"),
        ("inapplicable: supplier moved to a sibling", {**own, "supplier": "S-18"}, NOT, "passed"),
        ("inapplicable: another subject", own, NOT, "passed"),
        ("inapplicable: another tenant", own, NOT, "passed"),
        ("inapplicable: outside its validity", own, NOT, "passed"),
        ("revoked: basis withdrawn", own, NOT, "passed"),
    ]
    by_name = {c["scenario"]["name"]: c["scenario"] for c in gate}
    assert by_name["inapplicable: another subject"]["subject"] != "same"
    assert by_name["inapplicable: another tenant"]["tenant"] == "other"
    assert by_name["inapplicable: outside its validity"]["valid_at"] == iso(
        start - timedelta(days=1)
    )
    assert by_name["revoked: basis withdrawn"]["revoke_basis"] is True
    assert flow.memory(memory["id"])["status"] == "active"


def test_an_activation_that_would_create_a_conflict_fails_the_regression_check(flow: Flow):
    old = flow.active_rule({"project": "P-9"}, value="check every delivery")
    new = flow.rule({"project": "P-9"})

    preview = flow.memory(new["id"])["checks"]  # what the reviewer sees before deciding
    flow.approve(new["id"], "rita", "lena")

    assert preview == {
        "status": "failed",
        "passed": 4,
        "failed": 2,
        "total": 6,
        "run": "preview",
        "ran_at": preview["ran_at"],
    }
    assert flow.memory(new["id"])["status"] == "checks_failed"
    outcome, detail = gate_results(new["id"])[f"regression: {old['id']} v1 still resolves"]
    assert outcome == "failed"
    assert detail.startswith("activation would create a conflict: abstains: conflict")
    [fact] = flow.resolve({"project": "P-9"})["facts"]
    assert fact["memory_id"] == old["id"]  # what was in use stays in use


def test_a_changed_winner_is_reported_as_impact_and_does_not_fail(flow: Flow):
    old = flow.active_rule({"project": "P-9"}, value="check every delivery")
    record = flow.source("business_record", content="PO-7731 v3: exception granted.")
    new = flow.rule({"project": "P-9"}, sources=[record])  # verified_record outranks confirmed

    flow.approve(new["id"], "rita", "lena")

    checks = flow.ok(flow.get("rita", f"/memories/{new['id']}/checks"))
    regressions = [c for c in checks if c["scenario"]["kind"] == "regression"]
    assert [(c["run"], c["outcome"]) for c in regressions] == [
        ("preview", "passed"),
        ("gate", "passed"),
    ]
    preview, regression = regressions
    assert preview["impact"] == regression["impact"]  # the reviewer saw it before approving
    assert regression["impact"] == [
        {
            "context": {"project": "P-9"},
            "before": f"{old['id']} v1 (only applicable fact)",
            "after": f"{new['id']} v1 (verified_record outranks confirmed ({old['id']}))",
            "outranked": [f"{old['id']} v1"],
        }
    ]
    assert flow.resolved_ids({"project": "P-9"}) == [new["id"]]


def test_the_checks_listing_has_the_contract_shape(flow: Flow):
    renewal_3 = {"project": "P-9", "task": "renewal-3"}
    real_case = {"kind": "applicable", "context": renewal_3, "expect": "applies"}
    memory = flow.active_rule({"project": "P-9"}, scenarios=[real_case])

    checks = flow.ok(flow.get("agent", f"/memories/{memory['id']}/checks"))

    assert len(checks) == 12  # 6 scenarios, previewed at proposal, then the gate run
    for check in checks:
        assert {"scenario", "generated", "outcome", "detail", "policy_version", "ran_at"} <= set(
            check
        )
        assert isinstance(check["scenario"], dict)
        assert check["outcome"] in ("passed", "failed")
        assert isinstance(check["detail"], str) and check["detail"]
        assert check["policy_version"] == "1"
        assert check["ran_at"].endswith("Z")
        assert check["scenario"]["valid_at"].endswith("Z")  # UTC with Z, as everywhere
    assert [c["generated"] for c in checks if c["run"] == "gate"] == [True] * 5 + [False]
    assert flow.get("zed", f"/memories/{memory['id']}/checks").status_code == 404


def test_running_the_gate_task_twice_records_each_scenario_once(flow: Flow):
    memory = flow.active_rule({"project": "P-9"})
    version = head(memory["id"])
    rows = CheckResult.objects.filter(version=version).values_list("pk", "run", "scenario_key")
    before = list(rows)

    assert tasks.run_gate_checks.apply(args=(version.pk,)).get() == "active"

    assert list(rows) == before


def test_a_redelivered_gate_run_rewrites_its_results_instead_of_adding_rows(flow: Flow):
    memory = flow.rule({"project": "P-9"})
    for reviewer in ("rita", "lena"):
        flow.ok(flow.uncommitted(reviewer, f"/memories/{memory['id']}/approve"))
    version = head(memory["id"])
    assert version.status == Status.CHECKING  # the gate run was not handed over yet

    checking.checks_run(version=version, run=CheckResult.Run.GATE)
    checking.checks_run(version=version, run=CheckResult.Run.GATE)  # delivered twice
    assert tasks.run_gate_checks.apply(args=(version.pk,)).get() == "active"

    gate = CheckResult.objects.filter(version=version, run=CheckResult.Run.GATE)
    assert gate.count() == 5
    assert len({(r.scenario_key, r.policy_version) for r in gate}) == 5


def test_a_second_item_on_the_same_approval_falls_back_to_what_the_revocation_leaves(
    flow: Flow,
):
    # Given the tenant-wide rule stands on APR-2291; the P-9 exception cites the same record.
    approval = flow.source("approval_record")
    tenant_rule = flow.active_rule(TENANT, value="check every delivery", sources=[approval])
    exception = flow.rule({"project": "P-9"}, sources=[approval])

    flow.approve(exception["id"], "rita", "lena")

    # Then revoking APR-2291 would retire the tenant rule too: the fallback is what is left
    # (nothing), as it would be had the exception activated first (issue 33, point 5).
    assert flow.memory(exception["id"])["status"] == "active"
    outcome, detail = gate_results(exception["id"])["revoked: basis withdrawn"]
    assert outcome == "passed"
    assert detail.endswith("falls back to: abstains: no_applicable_fact")
    assert flow.resolved_ids({"project": "P-9"}) == [exception["id"]]
    assert flow.resolved_ids({"project": "P-10"}) == [tenant_rule["id"]]


def test_a_restricted_item_gets_a_visibility_scenario_that_passes(flow: Flow):
    legal = flow.source("approval_record", visibility=["legal", "staff"])
    memory = flow.active_rule({"project": "P-9"}, sources=[legal])

    checks = flow.ok(flow.get("rita", f"/memories/{memory['id']}/checks"))

    [gate] = [c for c in checks if c["run"] == "gate" and c["scenario"]["kind"] == "visibility"]
    assert gate["scenario"]["name"] == "visibility: a principal lacking its labels"
    assert gate["scenario"]["labels"] == []
    assert gate["outcome"] == "passed"


def test_labels_changed_behind_the_services_back_fail_the_visibility_check(
    flow: Flow, django_capture_on_commit_callbacks
):
    # Given an active rule on a staff record, whose labels are then narrowed to legal in
    # the database without the service (the copy the resolver filters on goes stale).
    staff_only = flow.source("approval_record", visibility=["staff"])
    memory = flow.active_rule({"project": "P-9"}, sources=[staff_only])
    Source.objects.filter(pk=staff_only).update(visibility=["legal"])

    with django_capture_on_commit_callbacks(execute=True):
        job = flow.ok(flow.post("rita", "/policy/revalidate", {"reason": "labels audit"}), 202)

    report = flow.ok(flow.get("rita", f"/revalidations/{job['revalidation']}"))
    assert (report["failed"], report["flagged"]) == (1, [memory["id"]])
    [row] = CheckResult.objects.filter(
        version=head(memory["id"]), run="revalidation", scenario__kind="visibility"
    )
    assert row.outcome == "failed"
    assert row.scenario["labels"] == ["staff"]
    assert row.detail.startswith("selected (expected does not apply)")


def test_other_subject_and_tenant_scenarios_ask_real_questions_that_can_fail(flow: Flow):
    # Given another subject of the tenant with a memory of the same field.
    other = flow.subject("Spot purchasing")
    flow.active_rule({"project": "P-9"}, subject=other, value="check every delivery")
    memory = flow.active_rule({"project": "P-10"})
    version = head(memory["id"])
    policy = resolver_policy(current_policy(version.tenant))
    now = timezone.now()

    specs = {s.name: s for s in scenario_checks.generated_specs(version, now)}
    another = specs["inapplicable: another subject"]
    outcome = scenario_checks.evaluate(version, another, policy, now)
    # The same question about the version's own subject: the check must notice.
    own = scenario_checks.evaluate(version, replace(another, subject_id=None), policy, now)
    other_tenant = specs["inapplicable: another tenant"]
    own_tenant = replace(other_tenant, tenant_id=None)

    assert scenario_checks.evaluate(version, other_tenant, policy, now).passed is True
    assert scenario_checks.evaluate(version, own_tenant, policy, now).passed is False
    assert another.subject_id == other
    assert outcome.passed is True
    assert own.passed is False
    assert own.detail.startswith("selected (expected does not apply)")
