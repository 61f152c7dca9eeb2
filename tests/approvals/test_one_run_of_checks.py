"""Issue 43, point 4: one truth for checks. The summary names the run it counts and when
it ran; a run replaces the previous run's results of its kind (so "active · all passed"
never sits beside "1 of 8 failed"); a preview older than a change that affects it says
so and is run again."""

from __future__ import annotations

from approvals import checking
from approvals.freshness import preview_refresh, preview_staleness
from approvals.models import CheckResult
from core.kinds import OutboxKind
from core.models import Outbox
from memory.models import Scenario
from tests.approvals.support import Flow, head, moment


def test_the_summary_names_its_run_and_when_it_ran(flow: Flow):
    memory = flow.rule({"project": "P-9"})

    preview = flow.memory(memory["id"])["checks"]
    flow.approve(memory["id"], "rita", "lena")
    gate = flow.memory(memory["id"])["checks"]

    assert preview["run"] == "preview"
    assert gate["run"] == "gate"
    runs = CheckResult.objects.filter(version=head(memory["id"]))
    assert moment(preview["ran_at"]) == max(r.ran_at for r in runs if r.run == "preview")
    assert moment(gate["ran_at"]) == max(r.ran_at for r in runs if r.run == "gate")


def test_before_any_run_the_summary_has_no_run_and_no_time(flow: Flow):
    memory = flow.rule({"project": "P-9"})
    CheckResult.objects.filter(version=head(memory["id"])).delete()

    assert flow.memory(memory["id"])["checks"] == {
        "status": "none",
        "passed": 0,
        "failed": 0,
        "total": 0,
        "run": None,
        "ran_at": None,
    }


def test_after_the_tie_is_retired_the_summary_and_the_stored_run_agree_with_active(
    flow: Flow,
):
    old = flow.active_rule({"project": "P-9"}, value="check every delivery")
    new = flow.rule({"project": "P-9"})
    flow.approve(new["id"], "rita", "lena")
    assert flow.memory(new["id"])["checks"]["failed"] == 2  # the tie: regression and own scope
    flow.ok(flow.retire(old["id"]))

    flow.ok(flow.post("omar", f"/memories/{new['id']}/recheck"))

    memory = flow.memory(new["id"])
    assert memory["status"] == "active"
    assert (memory["checks"]["status"], memory["checks"]["failed"]) == ("passed", 0)
    gate = CheckResult.objects.filter(version=head(new["id"]), run="gate")
    assert memory["checks"]["total"] == gate.count() == 5  # the tie's check went with it
    assert not gate.filter(scenario__kind="regression").exists()


def test_a_preview_older_than_a_sibling_s_activation_is_stale_and_reruns(flow: Flow):
    pending = flow.rule({"project": "P-9"})
    assert preview_staleness(head(pending["id"])) is None
    old_preview = flow.memory(pending["id"])["checks"]
    assert old_preview["status"] == "passed"

    flow.active_rule({"project": "P-9"}, value="check every delivery", statement="Other.")
    stale = preview_staleness(head(pending["id"]))

    assert stale is not None
    assert stale.change == "another memory of this field started being used"
    assert stale.ran_at is not None and stale.ran_at < stale.changed_at
    with flow._committed():
        assert preview_refresh(version=head(pending["id"])) == stale
    fresh = flow.memory(pending["id"])["checks"]
    assert fresh["status"] == "failed"  # now it ties with the rule activated since
    assert fresh["ran_at"] > old_preview["ran_at"]  # both UTC, RFC 3339 with Z
    assert preview_staleness(head(pending["id"])) is None


def test_a_stale_preview_is_asked_for_once_however_often_the_page_polls(flow: Flow):
    pending = flow.rule({"project": "P-9"})
    flow.active_rule({"project": "P-9"}, value="check every delivery", statement="Other.")
    asked = Outbox.objects.filter(
        kind=OutboxKind.PREVIEW_CHECKS, payload__version_id=head(pending["id"]).pk
    )
    before = asked.count()

    for _ in range(3):  # not committed: the preview has not run, the page keeps polling
        assert preview_refresh(version=head(pending["id"])) is not None

    assert asked.count() == before + 1


def test_a_scenario_added_or_removed_after_the_preview_makes_it_stale(flow: Flow):
    pending = flow.rule({"project": "P-9"})
    case = {"kind": "applicable", "context": {"project": "P-9"}, "expect": "applies"}
    flow.world.client("rita").post(  # not committed: the rerun it asks for has not run
        f"/api/v1/memories/{pending['id']}/scenarios", case, format="json"
    )
    stale = preview_staleness(head(pending["id"]))
    assert stale is not None and stale.change == "a scenario was added"

    checking.preview(head(pending["id"]).pk)  # the rerun the addition asked for
    assert preview_staleness(head(pending["id"])) is None
    scenario = Scenario.objects.get(version__item_id=pending["id"])
    flow.world.client("rita").post(
        f"/api/v1/memories/{pending['id']}/scenarios/{scenario.pk}/remove",
        {"reason": "duplicate of the generated check"},
        format="json",
    )
    stale = preview_staleness(head(pending["id"]))
    assert stale is not None and stale.change == "a scenario was removed"


def test_a_version_in_review_with_no_preview_yet_is_due_its_first_run(flow: Flow):
    pending = flow.rule({"project": "P-9"})
    CheckResult.objects.filter(version=head(pending["id"])).delete()

    stale = preview_staleness(head(pending["id"]))

    assert stale is not None
    assert (stale.ran_at, stale.change) == (None, "it was recorded")
