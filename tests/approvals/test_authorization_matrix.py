"""Who may decide what (docs/api.md, Memories and Sources; docs/design.md, Permissions).

One table per action, one row per item, one column per persona; every cell is a test.
The items (seed 001):

- ``task_fact@P-9``:  renewal-3 of project P-9 is approved (APR-2291), a task fact;
- ``task_fact@P-10``: the same for renewal-4 of project P-10;
- ``rule@tenant``:    a tenant-wide enterprise rule (``{"tenant": "*"}``).

The personas: ``agent`` (an agent key), ``paula`` (the proposer: a user holding every
permission on the tenant, who proposed the item with her own key — so a refusal is
because she proposed it, not for lack of authority), ``rita`` (every permission on the
tenant), ``omar`` (review and retire on project P-9 only), ``lena`` (reviews enterprise
rules and approves tenant-wide ones; no ``review_task_fact``: a reviewer of another
kind for task facts; no ``retire_memory``), ``nora`` (no grants), ``zed`` (another
tenant, holding every permission there).

Codes: 200 (201 for a scenario) done; 403 agent, proposer or no authority; 404 another
tenant's item. The proposer may end the use of what she proposed (retire, revoke), link
its subject (linking admits nothing: the item still needs other people's approvals) and
add scenarios to it; she may never approve or reject it. The 409 cells (wrong status,
repeated decision) are at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from approvals.models import Approval
from memory.models import Scenario, Source
from tests.approvals.support import Flow, head, person
from tests.conftest import ALL_PERMISSIONS

PERSONAS = ("agent", "paula", "rita", "omar", "lena", "nora", "zed")
ITEMS = {
    "task_fact@P-9": ("task_fact", {"task": "renewal-3", "project": "P-9"}),
    "task_fact@P-10": ("task_fact", {"task": "renewal-4", "project": "P-10"}),
    "rule@tenant": ("enterprise_rule", {"tenant": "*"}),
}

#                      agent  paula  rita  omar  lena  nora  zed
APPROVE = """
    task_fact@P-9       403    403    200   200   403   403   404
    task_fact@P-10      403    403    200   403   403   403   404
    rule@tenant         403    403    200   403   200   403   404
"""
REJECT = APPROVE  # "same authority as approve"
RETIRE = """
    task_fact@P-9       403    200    200   200   403   403   404
    task_fact@P-10      403    200    200   403   403   403   404
    rule@tenant         403    200    200   403   403   403   404
"""
REVOKE = RETIRE  # the source's memories are retired: retire_memory over each of them
# POST /memories/{id}/scenarios: "written by the proposer or a reviewer" (docs/design.md).
SCENARIOS = """
    task_fact@P-9       403    201    201   201   403   403   404
    task_fact@P-10      403    201    201   403   403   403   404
    rule@tenant         403    201    201   403   201   403   404
"""
LINK_SUBJECT = """
    task_fact@P-9       403    200    200   200   403   403   404
    task_fact@P-10      403    200    200   403   403   403   404
    rule@tenant         403    200    200   403   200   403   404
"""


def cells(action: str, table: str) -> list[Any]:
    rows = [line.split() for line in table.strip().splitlines()]
    return [
        pytest.param(action, item, who, int(code), id=f"{action}-{item}-{who}-{code}")
        for item, *codes in rows
        for who, code in zip(PERSONAS, codes, strict=True)
    ]


MATRIX = [
    *cells("approve", APPROVE),
    *cells("reject", REJECT),
    *cells("retire", RETIRE),
    *cells("revoke", REVOKE),
    *cells("link-subject", LINK_SUBJECT),
    *cells("scenarios", SCENARIOS),
]


@dataclass
class Target:
    memory_id: str
    source_id: str
    status: str


@pytest.fixture
def paula(flow: Flow) -> str:
    person(flow.world, "paula", *ALL_PERMISSIONS)
    return "paula"


def propose_as_paula(flow: Flow, action: str, item: str) -> Target:
    """The item to decide on; its preview checks and notices (on-commit work) are skipped:
    they say nothing about authority and would triple the cost of the table."""
    kind, scope = ITEMS[item]
    source = flow.source("approval_record", who="paula")
    body = flow.body(kind, scope, sources=[source])
    if action == "link-subject":
        body["subject"], body["subject_mention"] = None, "the renewal process"
    memory = flow.ok(flow.uncommitted("paula", "/memories", body), 201)
    return Target(memory["id"], source, memory["status"])


def attempt(flow: Flow, action: str, who: str, target: Target) -> Any:
    path = f"/memories/{target.memory_id}/{action}"
    if action == "approve":
        return flow.post(who, path, {"comment": "checked APR-2291"})
    if action == "reject":
        return flow.post(who, path, {"reason": "APR-2291 does not cover this"})
    if action == "retire":
        return flow.post(who, path, {"reason": "APR-2291 withdrawn"})
    if action == "revoke":
        return flow.post(who, f"/sources/{target.source_id}/revoke", {"reason": "withdrawn"})
    if action == "scenarios":
        case = {"kind": "inapplicable", "context": {"project": "P-11"}, "expect": "does_not_apply"}
        return flow.post(who, path, case)
    return flow.post(who, path, {"subject": flow.subject()})


def assert_done(flow: Flow, action: str, who: str, target: Target, body: Any) -> None:
    version = head(target.memory_id)
    if action == "approve":
        assert [a["reviewer"] for a in body["approvals"]] == [who]
        # A task fact needs one approval, a rule two: one approval is not yet enough.
        needed = version.approvals_required
        assert body["status"] == ("checking" if needed == 1 else "pending_review")
        assert Approval.objects.filter(version=version).count() == 1
        return
    elif action == "reject":
        assert body["status"] == "rejected"
        assert [(a["reviewer"], a["decision"]) for a in body["approvals"]] == [(who, "reject")]
    elif action == "retire":
        assert body["memory"]["status"] == "retired"
        assert body["flagged_tasks"] == []
    elif action == "revoke":
        assert body["memories"] == [target.memory_id]
        assert version.status == "retired"
    elif action == "scenarios":
        assert (body["created_by"], body["context"]) == (f"user:{who}", {"project": "P-11"})
        assert Scenario.objects.filter(version=version).count() == 1
        return
    else:
        assert (body["status"], body["subject"]) == ("pending_review", flow.subject())
    assert version.status != target.status


def assert_untouched(target: Target) -> None:
    version = head(target.memory_id)
    assert version.status == target.status
    assert Approval.objects.filter(version=version).count() == 0
    assert Source.objects.get(pk=target.source_id).revoked_at is None
    assert Scenario.objects.filter(version=version).count() == 0


@pytest.mark.parametrize(("action", "item", "who", "code"), MATRIX)
def test_authorization_matrix(flow, paula, action, item, who, code):
    target = propose_as_paula(flow, action, item)

    response = attempt(flow, action, who, target)

    assert response.status_code == code, response.content
    if code in (200, 201):
        assert_done(flow, action, who, target, response.json())
    else:
        assert response["Content-Type"] == "application/problem+json"
        assert response.json()["status"] == code
        assert_untouched(target)


# --- 409: the right person at the wrong moment -----------------------------------------


def test_the_proposing_agent_may_add_a_scenario_to_its_own_proposal(flow):
    memory = flow.rule()
    case = {"kind": "applicable", "context": {"project": "P-9"}, "expect": "applies"}

    response = flow.post("agent", f"/memories/{memory['id']}/scenarios", case)

    assert response.status_code == 201
    assert response.json()["created_by"] == "agent:bot"


def test_adding_a_scenario_to_an_active_item_is_a_conflict(flow):
    memory = flow.active_rule()
    case = {"kind": "applicable", "context": {"project": "P-9"}, "expect": "applies"}

    response = flow.post("rita", f"/memories/{memory['id']}/scenarios", case)

    assert response.status_code == 409


def test_approving_a_rejected_item_is_a_conflict(flow):
    memory = flow.rule()
    flow.ok(flow.post("rita", f"/memories/{memory['id']}/reject", {"reason": "no"}))

    response = flow.post("omar", f"/memories/{memory['id']}/approve", {})

    assert response.status_code == 409
    assert flow.memory(memory["id"])["status"] == "rejected"


def test_rejecting_after_approving_is_a_repeated_decision(flow):
    memory = flow.rule()
    flow.approve(memory["id"], "rita")

    response = flow.post("rita", f"/memories/{memory['id']}/reject", {"reason": "second thoughts"})

    assert response.status_code == 409
    after = flow.memory(memory["id"])
    assert [(a["reviewer"], a["decision"]) for a in after["approvals"]] == [("rita", "approve")]
    assert after["status"] == "pending_review"


def test_rejecting_an_active_item_is_a_conflict(flow):
    memory = flow.active_rule()

    response = flow.post("omar", f"/memories/{memory['id']}/reject", {"reason": "late"})

    assert response.status_code == 409
    assert flow.memory(memory["id"])["status"] == "active"


def test_approving_an_item_whose_checks_are_running_is_a_conflict(flow):
    memory = flow.propose("task_fact", {"task": "renewal-3", "project": "P-9"})
    flow.ok(flow.uncommitted("rita", f"/memories/{memory['id']}/approve"))
    # No commit callbacks ran: the gate was not run, the version is still checking.

    response = flow.post("omar", f"/memories/{memory['id']}/approve", {})

    assert response.status_code == 409
    assert head(memory["id"]).status == "checking"


def test_retiring_a_retired_item_is_a_conflict(flow):
    memory = flow.active_rule()
    flow.ok(flow.retire(memory["id"]))

    response = flow.retire(memory["id"])

    assert response.status_code == 409
    assert flow.memory(memory["id"])["status"] == "retired"


def test_revoking_a_revoked_source_is_a_conflict(flow):
    memory = flow.active_rule()
    [source] = memory["sources"]
    flow.ok(flow.post("rita", f"/sources/{source}/revoke", {"reason": "APR-2291 withdrawn"}))

    response = flow.post("rita", f"/sources/{source}/revoke", {"reason": "again"})

    assert response.status_code == 409
    assert response["Content-Type"] == "application/problem+json"


def test_linking_the_subject_of_an_item_that_is_not_held_is_a_conflict(flow):
    memory = flow.rule()

    response = flow.post(
        "rita", f"/memories/{memory['id']}/link-subject", {"subject": memory["subject"]}
    )

    assert response.status_code == 409
    assert flow.memory(memory["id"])["status"] == "pending_review"


def test_rechecking_an_item_whose_checks_did_not_fail_is_a_conflict(flow):
    memory = flow.rule()

    response = flow.post("rita", f"/memories/{memory['id']}/recheck")

    assert response.status_code == 409
    assert flow.memory(memory["id"])["status"] == "pending_review"
