"""The revoked-basis scenario does not depend on activation order (issue 33, point 5).

docs/design.md: the item's basis revoked → the item must not be selected and the field falls
back to what resolved before. Revoking a finance memo retires every item citing it
(source_revoke), so the fallback is what resolves without this version *and* without the
other items the same revocation withdraws. Two rules on one memo, approved together, then
pass whichever activates first; a revocation that would fall back to something else, or
leave the version in use, still fails."""

from __future__ import annotations

import pytest
from django.utils import timezone

from approvals import checks, tasks
from approvals.models import CheckResult
from memory.models import Source, Status
from memory.selectors import current_policy, resolver_policy
from tests.approvals.support import Flow, head

P5 = {"project": "P-5"}
P5_S1 = {"project": "P-5", "supplier": "S-1"}
REVOKED = "revoked: basis withdrawn"


def payment_rule(flow: Flow, scope: dict[str, str], value: str, memo: str) -> str:
    memory = flow.rule(
        scope,
        field="payment_terms",
        value=value,
        statement=f"Project P-5 pays {value}.",
        sources=[memo],
        basis={"ref": "FIN-MEMO-12", "version": "1"},
    )
    return str(memory["id"])


def approved_together(flow: Flow) -> tuple[str, str]:
    """The broad net30 and the narrow net45 rule on one finance memo, both approved, their
    gate runs not started yet."""
    memo = flow.source("approval_record", content="FIN-MEMO-12: P-5 net30, S-1 net45.")
    broad = payment_rule(flow, P5, "net30", memo)
    narrow = payment_rule(flow, P5_S1, "net45", memo)
    for memory_id in (broad, narrow):
        for reviewer in ("rita", "lena"):
            flow.ok(flow.uncommitted(reviewer, f"/memories/{memory_id}/approve"))
        assert head(memory_id).status == Status.CHECKING
    return broad, narrow


def revoked_result(memory_id: str) -> CheckResult:
    return CheckResult.objects.get(version=head(memory_id), run="gate", scenario__name=REVOKED)


@pytest.mark.parametrize("first", ["broad", "narrow"])
def test_two_rules_on_one_finance_memo_activate_in_either_order(flow: Flow, first: str):
    broad, narrow = approved_together(flow)
    order = [broad, narrow] if first == "broad" else [narrow, broad]

    concluded = [tasks.run_gate_checks.apply(args=(head(m).pk,)).get() for m in order]

    assert concluded == ["active", "active"]
    for memory_id in order:
        result = revoked_result(memory_id)
        assert result.outcome == "passed", result.detail
        # Revoking the memo withdraws both rules: nothing answers for P-5 any more.
        assert result.detail.endswith("falls back to: abstains: no_applicable_fact")
    assert flow.resolved_ids(P5_S1, fields=["payment_terms"]) == [narrow]
    assert flow.resolved_ids(P5, fields=["payment_terms"]) == [broad]


@pytest.mark.parametrize("first", ["broad", "narrow"])
def test_both_rules_on_one_memo_pass_their_revalidation_too(flow: Flow, first: str):
    broad, narrow = approved_together(flow)
    order = [broad, narrow] if first == "broad" else [narrow, broad]
    for memory_id in order:
        tasks.run_gate_checks.apply(args=(head(memory_id).pk,)).get()
    policy = resolver_policy(current_policy(head(broad).tenant))
    now = timezone.now()

    outcomes = {
        memory_id: checks.run_all(head(memory_id), policy, now) for memory_id in (broad, narrow)
    }

    for found in outcomes.values():
        assert [(o.spec.name, o.detail) for o in found if not o.passed] == []


def test_a_revocation_leaving_another_item_on_the_memo_in_use_fails(flow: Flow):
    # Given the broad rule cites the memo, but its link to it was lost behind the
    # service's back: revoking the memo would leave it in use although it names the memo.
    memo = flow.source("approval_record", content="FIN-MEMO-12: P-5 net30, S-1 net45.")
    broad = payment_rule(flow, P5, "net30", memo)
    flow.approve(broad, "rita", "lena")
    assert flow.memory(broad)["status"] == "active"
    head(broad).sources.remove(Source.objects.get(pk=memo))
    narrow = payment_rule(flow, P5_S1, "net45", memo)

    flow.approve(narrow, "rita", "lena")

    assert flow.memory(narrow)["status"] == "checks_failed"
    result = revoked_result(narrow)
    assert result.outcome == "failed"
    assert result.detail.startswith(
        "revoking its basis would not fall back to what resolves without it"
    )
    assert result.detail.endswith("vs abstains: no_applicable_fact")
    assert f"{broad} v1" in result.detail


def test_a_revocation_that_would_leave_the_version_in_use_fails(flow: Flow):
    # Given a rule whose own link to its memo is missing: the revocation would not reach it.
    memo = flow.source("approval_record", content="FIN-MEMO-12: P-5 net30.")
    rule = payment_rule(flow, P5, "net30", memo)
    head(rule).sources.remove(Source.objects.get(pk=memo))

    flow.approve(rule, "rita", "lena")

    assert flow.memory(rule)["status"] == "checks_failed"
    result = revoked_result(rule)
    assert result.outcome == "failed"
    assert result.detail.startswith("selected (expected does not apply)")


def test_the_revoked_check_falls_back_to_a_rule_on_another_record(flow: Flow):
    # Given the tenant-wide rule stands on its own record: revoking P-5's memo keeps it.
    other = flow.source("approval_record", content="FIN-POLICY-1: net60 everywhere.")
    memo = flow.source("approval_record", content="FIN-MEMO-12: P-5 net30.")
    tenant_wide = payment_rule(flow, {"tenant": "*"}, "net60", other)
    flow.approve(tenant_wide, "rita", "lena")
    rule = payment_rule(flow, P5, "net30", memo)

    flow.approve(rule, "rita", "lena")

    assert flow.memory(rule)["status"] == "active"
    result = revoked_result(rule)
    assert result.outcome == "passed"
    assert result.detail.endswith(f"falls back to: {tenant_wide} v1 (only applicable fact)")
