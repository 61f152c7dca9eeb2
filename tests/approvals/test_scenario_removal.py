"""Issue 43, point 6: a wrong custom scenario is not a dead end. The proposer or a reviewer
removes it before activation (audited, with a reason), Reject stays available once the
checks failed, and a correction starts from the scenarios still in force."""

from __future__ import annotations

from typing import Any

from approvals.models import CheckResult, ScenarioRemoval
from audit.chain import digest
from audit.models import AuditEvent
from memory.models import Scenario
from tests.approvals.support import Flow, head

# Seed 001's exception does cover batch B-4: this scenario misreads the case.
WRONG = {
    "kind": "inapplicable",
    "context": {"project": "P-9", "batch": "B-4"},
    "expect": "does_not_apply",
}
REASON = {"reason": "B-4 is covered by the same exception; the scenario was wrong."}


def _failed_on_the_wrong_scenario(flow: Flow) -> tuple[str, int]:
    memory = flow.rule({"project": "P-9"}, scenarios=[WRONG])
    flow.approve(memory["id"], "rita", "lena")
    assert flow.memory(memory["id"])["status"] == "checks_failed"
    [scenario] = flow.ok(flow.get("rita", f"/memories/{memory['id']}/scenarios"))["results"]
    return memory["id"], scenario["id"]


def _remove(flow: Flow, who: str, memory_id: str, scenario_id: int, **body: Any) -> Any:
    path = f"/memories/{memory_id}/scenarios/{scenario_id}/remove"
    return flow.post(who, path, body or REASON)


def test_a_reviewer_removes_a_wrong_scenario_with_a_reason_and_it_is_audited(flow: Flow):
    memory_id, scenario_id = _failed_on_the_wrong_scenario(flow)

    removed = flow.ok(_remove(flow, "omar", memory_id, scenario_id))

    assert removed["id"] == scenario_id
    assert removed["removed"]["by"] == "user:omar"
    assert removed["removed"]["reason"] == REASON["reason"]
    assert removed["removed"]["at"].endswith("Z")
    listed = flow.ok(flow.get("agent", f"/memories/{memory_id}/scenarios"))["results"]
    assert [(s["id"], s["removed"]["by"]) for s in listed] == [(scenario_id, "user:omar")]
    event = AuditEvent.objects.get(action="memory.scenario_removed", target_id=memory_id)
    assert event.actor == "user:omar"
    assert event.data == {
        "version": 1,
        "scenario": scenario_id,
        "kind": "inapplicable",
        "expect": "does_not_apply",
        "reason_sha256": digest(REASON["reason"]),
    }


def test_the_proposer_may_remove_a_scenario_of_its_own_proposal(flow: Flow):
    memory = flow.rule({"project": "P-9"}, scenarios=[WRONG])
    [scenario] = flow.ok(flow.get("agent", f"/memories/{memory['id']}/scenarios"))["results"]

    removed = flow.ok(_remove(flow, "agent", memory["id"], scenario["id"]))

    assert removed["removed"]["by"] == "agent:bot"


def test_removing_a_scenario_is_refused_to_anyone_else(flow: Flow):
    memory_id, scenario_id = _failed_on_the_wrong_scenario(flow)
    p10_case = {**WRONG, "context": {"project": "P-10", "batch": "B-4"}}
    p10 = flow.rule({"project": "P-10"}, statement="P-10 follows APR-2291.", scenarios=[p10_case])
    [p10_scenario] = flow.ok(flow.get("rita", f"/memories/{p10['id']}/scenarios"))["results"]

    # nora reviews nothing; omar reviews P-9 only; zed is another tenant's.
    assert _remove(flow, "nora", memory_id, scenario_id).status_code == 403
    assert _remove(flow, "omar", p10["id"], p10_scenario["id"]).status_code == 403
    assert _remove(flow, "zed", memory_id, scenario_id).status_code == 404
    assert not ScenarioRemoval.objects.exists()
    assert not AuditEvent.objects.filter(action="memory.scenario_removed").exists()


def test_a_scenario_of_another_memory_is_not_found(flow: Flow):
    _, scenario_id = _failed_on_the_wrong_scenario(flow)
    other = flow.rule({"project": "P-9"}, statement="Another P-9 rule.", value="other")

    assert _remove(flow, "rita", other["id"], scenario_id).status_code == 404


def test_removing_after_activation_or_twice_is_a_conflict(flow: Flow):
    memory = flow.rule(
        {"project": "P-9"},
        scenarios=[{"kind": "applicable", "context": {"project": "P-9"}, "expect": "applies"}],
    )
    flow.approve(memory["id"], "rita", "lena")
    assert flow.memory(memory["id"])["status"] == "active"
    [scenario] = flow.ok(flow.get("rita", f"/memories/{memory['id']}/scenarios"))["results"]

    assert _remove(flow, "rita", memory["id"], scenario["id"]).status_code == 409

    memory_id, scenario_id = _failed_on_the_wrong_scenario(flow)
    flow.ok(_remove(flow, "rita", memory_id, scenario_id))
    assert _remove(flow, "rita", memory_id, scenario_id).status_code == 409
    assert _remove(flow, "rita", memory_id, scenario_id, reason="").status_code == 422


def test_a_recheck_after_the_removal_activates_it_and_drops_the_scenario_s_result(flow: Flow):
    memory_id, scenario_id = _failed_on_the_wrong_scenario(flow)
    flow.ok(_remove(flow, "omar", memory_id, scenario_id))

    flow.ok(flow.post("omar", f"/memories/{memory_id}/recheck"))

    memory = flow.memory(memory_id)
    assert memory["status"] == "active"
    assert memory["checks"]["failed"] == 0
    assert memory["checks"]["run"] == "gate"
    gate = CheckResult.objects.filter(version=head(memory_id), run="gate")
    assert not [r for r in gate if not r.generated]  # its failed result is gone with it


def test_reject_stays_available_once_the_checks_failed(flow: Flow):
    memory_id, _ = _failed_on_the_wrong_scenario(flow)

    # omar did not approve it; rita did, before the checks failed: either may reject now.
    rejected = flow.ok(flow.post("rita", f"/memories/{memory_id}/reject", REASON))

    assert rejected["status"] == "rejected"
    event = AuditEvent.objects.get(action="memory.rejected", target_id=memory_id)
    assert (event.actor, event.data["from"]) == ("user:rita", "checks_failed")
    assert flow.post("rita", f"/memories/{memory_id}/reject", REASON).status_code == 409


def test_the_proposer_still_cannot_reject_after_the_checks_failed(flow: Flow):
    memory = flow.rule({"project": "P-9"}, who="omar", scenarios=[WRONG])
    flow.approve(memory["id"], "rita", "lena")
    assert flow.memory(memory["id"])["status"] == "checks_failed"

    assert flow.post("omar", f"/memories/{memory['id']}/reject", REASON).status_code == 403
    assert flow.post("agent", f"/memories/{memory['id']}/reject", REASON).status_code == 403


def test_a_correction_starts_from_the_scenarios_still_in_force(flow: Flow):
    memory = flow.rule({"project": "P-9"}, scenarios=[WRONG])
    p10 = {"kind": "inapplicable", "context": {"project": "P-10"}, "expect": "does_not_apply"}
    flow.ok(flow.post("rita", f"/memories/{memory['id']}/scenarios", p10), 201)
    flow.approve(memory["id"], "rita", "lena")
    wrong = Scenario.objects.get(version__item_id=memory["id"], context=WRONG["context"])
    flow.ok(_remove(flow, "rita", memory["id"], wrong.pk))

    flow.correct(memory["id"], 1, statement="Renewals of P-9 follow exception APR-2291.")
    preview = flow.memory(memory["id"])["checks"]

    assert (preview["run"], preview["status"], preview["failed"]) == ("preview", "passed", 0)
    custom = CheckResult.objects.filter(version=head(memory["id"]), generated=False)
    assert [r.scenario["context"] for r in custom] == [p10["context"]]
    flow.approve(memory["id"], "rita", "lena")
    assert flow.memory(memory["id"])["status"] == "active"
