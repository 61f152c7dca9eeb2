"""The everyday path of the product (issue 9, point 2): a task_fact is corrected because
the order changed, citing the new version of the order; after one approval the new
version is in use, the old one superseded, and the revoked check compares against what
resolved before this correction (the still-active predecessor), not against nothing."""

from __future__ import annotations

from typing import Any

from approvals.models import CheckResult
from memory.lifecycle import version_fail_checks
from tests.approvals.support import Flow, head

ORDER_A = {"task": "order-a"}


def order_record(flow: Flow, version: int, address: str) -> str:
    return flow.source(
        "business_record",
        content=f"Order order-a v{version}: deliver to {address}.",
        external_ref="ORD-A",
        version=str(version),
    )


def address_fact(flow: Flow) -> Any:
    return flow.propose(
        "task_fact",
        ORDER_A,
        field="delivery_address",
        value="12 Elm Street",
        statement="Order order-a goes to 12 Elm Street.",
        sources=[order_record(flow, 1, "12 Elm Street")],
        basis={"ref": "ORD-A", "version": "1"},
    )


def correct_with_new_record(flow: Flow, memory_id: str, version: int, address: str) -> Any:
    return flow.correct(
        memory_id,
        version - 1,
        value=address,
        statement=f"Order order-a now goes to {address}.",
        sources=[order_record(flow, version, address)],
        basis={"ref": "ORD-A", "version": str(version)},
    )


def story_of_two_corrections(flow: Flow) -> str:
    """v1 proposed and approved; corrected twice with new records; each approved once."""
    memory = address_fact(flow)
    flow.approve(memory["id"], "rita")
    assert flow.memory(memory["id"])["status"] == "active"
    assert [f["value"] for f in flow.resolve(ORDER_A)["facts"]] == ["12 Elm Street"]

    correct_with_new_record(flow, memory["id"], 2, "4 Dock Road")
    flow.approve(memory["id"], "rita")
    return str(memory["id"])


def test_a_correction_citing_a_new_record_goes_live_after_one_approval(flow: Flow):
    memory_id = story_of_two_corrections(flow)

    now = flow.memory(memory_id)
    versions = flow.ok(flow.get("rita", f"/memories/{memory_id}/versions"))
    assert (now["version"], now["active_version"], now["status"]) == (2, 2, "active")
    assert now["checks"]["failed"] == 0
    assert [v["status"] for v in versions] == ["superseded", "active"]
    [fact] = flow.resolve(ORDER_A)["facts"]
    assert (fact["memory_id"], fact["version"], fact["value"]) == (memory_id, 2, "4 Dock Road")
    revoked = CheckResult.objects.get(
        version=head(memory_id), run="gate", scenario__name="revoked: basis withdrawn"
    )
    assert revoked.outcome == "passed"
    assert f"falls back to: {memory_id} v1" in revoked.detail


def test_the_second_correction_goes_live_too_and_retiring_ends_its_use(flow: Flow):
    memory_id = story_of_two_corrections(flow)

    correct_with_new_record(flow, memory_id, 3, "9 Quay Street")
    flow.approve(memory_id, "rita")

    assert flow.memory(memory_id)["status"] == "active"
    assert [f["value"] for f in flow.resolve(ORDER_A)["facts"]] == ["9 Quay Street"]
    versions = flow.ok(flow.get("rita", f"/memories/{memory_id}/versions"))
    assert [v["status"] for v in versions] == ["superseded", "superseded", "active"]

    flow.ok(flow.retire(memory_id))

    assert flow.resolve(ORDER_A, fields=["delivery_address"])["facts"] == []
    assert flow.memory(memory_id)["status"] == "retired"


def test_a_correction_failed_by_the_old_revoked_check_passes_its_recheck(flow: Flow):
    # Given v2 approved, its gate run concluded as failed (as the old revoked check did).
    memory_id = story_of_two_corrections(flow)
    correct_with_new_record(flow, memory_id, 3, "9 Quay Street")
    flow.ok(flow.uncommitted("rita", f"/memories/{memory_id}/approve"))
    version_fail_checks(
        version_id=head(memory_id).pk,
        actor="system:checks",
        detail="revoked: basis withdrawn: fallback differs from before",
    )
    assert flow.memory(memory_id)["status"] == "checks_failed"

    response = flow.post("rita", f"/memories/{memory_id}/recheck")

    assert response.status_code == 200, response.content
    now = flow.memory(memory_id)
    assert (now["version"], now["active_version"], now["status"]) == (3, 3, "active")
    assert [f["value"] for f in flow.resolve(ORDER_A)["facts"]] == ["9 Quay Street"]
    rows = CheckResult.objects.filter(version=head(memory_id), run="gate")
    assert {r.outcome for r in rows} == {"passed"}
