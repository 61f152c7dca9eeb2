"""Issue 43, points 2, 4 and 6 on the dashboard, without a browser: an approval of a
version whose preview failed counts only when confirmed (on its page, in bulk, with the
``a`` key); the page names the run its checks come from; a wrong scenario is removed
(audited) and Reject stays once the checks failed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils.html import escape

from approvals import services
from approvals.models import Approval, ScenarioRemoval
from audit.models import AuditEvent
from core.outbox import outbox_sweep
from memory.models import MemoryVersion, Scenario
from tests.dashboard.support import Demo

ORDER = "Order order-a goes to Dana's office."
WRONG = {"kind": "inapplicable", "context": {"task": "order-a"}, "expect": "does_not_apply"}
FAILURE = (
    "A scenario added by rita says it must not apply where task is order-a, but agents "
    "asking there would be told it."
)


@pytest.fixture
def commit(django_capture_on_commit_callbacks: Any) -> Any:
    return lambda: django_capture_on_commit_callbacks(execute=True)


def _failing_preview(demo: Demo, commit: Any) -> str:
    """order-a with rita's scenario saying it must not apply to order-a: its preview fails."""
    with commit():
        services.scenario_add(
            principal=demo.principal("rita"), item=demo.item("order_a"), data=WRONG
        )
    return demo.items["order_a"]


def _approvals(memory_id: str) -> int:
    return Approval.objects.filter(version__item_id=memory_id).count()


def test_the_approve_card_names_the_preview_failures_and_asks_to_confirm_them(
    demo: Demo, commit: Any
) -> None:
    memory_id = _failing_preview(demo, commit)

    page = demo.client("rita").get(f"/memories/{memory_id}/").content.decode()

    assert "Its preview failed 1 check:" in page
    assert escape(FAILURE) in page
    assert 'name="despite" value="1" required' in page
    assert "Approve despite these failures" in page


def test_approving_a_failed_preview_without_confirming_approves_nothing(
    demo: Demo, commit: Any
) -> None:
    memory_id = _failing_preview(demo, commit)
    rita = demo.client("rita")

    refused = rita.post(f"/memories/{memory_id}/approve/", {"comment": ""})
    with commit():
        confirmed = rita.post(f"/memories/{memory_id}/approve/", {"comment": "", "despite": "1"})

    assert refused.status_code == 409
    assert escape(
        "Not approved: its preview failed: a scenario added by rita says it must not"
    ) in (refused.content.decode())
    assert confirmed.status_code == 302
    assert _approvals(memory_id) == 1


def test_bulk_approve_leaves_a_failed_preview_out_and_lists_it_unless_confirmed(
    demo: Demo, commit: Any
) -> None:
    memory_id = _failing_preview(demo, commit)
    rule = demo.items["tenant_rule"]
    rita = demo.client("rita")

    with commit():
        response = rita.post("/queue/approve/", {"memory": [memory_id, rule]}, follow=True)

    said = [str(m) for m in response.context["messages"]]
    assert said[0] == "Approved 1 of 2. Left out 1 whose preview failed."
    assert said[1].startswith(f"“{ORDER}”: left out, not approved: its preview failed: ")
    assert _approvals(memory_id) == 0
    assert _approvals(rule) == 1

    with commit():
        rita.post("/queue/approve/", {"memory": [memory_id], "despite": [memory_id]})
    assert _approvals(memory_id) == 1


def test_the_a_key_path_leaves_a_failed_preview_out_unless_its_row_is_confirmed(
    demo: Demo, commit: Any
) -> None:
    memory_id = _failing_preview(demo, commit)
    rita = demo.client("rita")
    queue = rita.get("/").content.decode()
    assert f'name="despite" value="{memory_id}"' in queue

    with commit():
        left_out = rita.post("/queue/approve/", {"only": memory_id}, follow=True)
    assert _approvals(memory_id) == 0
    [said] = [str(m) for m in left_out.context["messages"]]
    assert said.startswith(f"“{ORDER}”: left out, not approved: its preview failed")

    with commit():
        rita.post("/queue/approve/", {"only": memory_id, "despite": memory_id})
    assert _approvals(memory_id) == 1


def test_the_checks_panel_names_the_run_the_status_counts(demo: Demo, commit: Any) -> None:
    memory_id = _failing_preview(demo, commit)

    page = demo.client("rita").get(f"/memories/{memory_id}/").content.decode()

    assert 'id="checks-run">from the preview run of <time' in page
    assert '<details class="checkrun is-current" open>' in page
    assert page.count("checkrun is-current") == 1


def test_a_reviewer_removes_a_wrong_scenario_on_the_page_and_it_is_audited(
    demo: Demo, commit: Any
) -> None:
    memory_id = _failing_preview(demo, commit)
    scenario = Scenario.objects.get(version__item_id=memory_id)
    path = f"/memories/{memory_id}/scenarios/{scenario.pk}/remove/"
    page = demo.client("rita").get(f"/memories/{memory_id}/").content.decode()
    assert f'action="{path}"' in page
    reason = "order-a is Dana's office order; the case was misread"

    sam = demo.client("sam").post(path, {"reason": "wrong"})  # owns it, reviews nothing
    with commit():
        rita = demo.client("rita").post(path, {"reason": reason})

    assert sam.status_code == 403
    assert rita.status_code == 302
    removal = ScenarioRemoval.objects.get(scenario=scenario)
    assert (removal.removed_by, removal.reason) == ("user:rita", reason)
    assert AuditEvent.objects.filter(action="memory.scenario_removed", actor="user:rita").exists()
    after = demo.client("rita").get(f"/memories/{memory_id}/").content.decode()
    assert "Removed by user:rita" in after
    assert "Its preview failed" not in after  # the rerun without it passed
    assert f'action="{path}"' not in after


def test_reject_is_offered_once_the_checks_failed(demo: Demo, commit: Any) -> None:
    memory_id = _failing_preview(demo, commit)
    rita = demo.client("rita")
    with commit():
        rita.post(f"/memories/{memory_id}/approve/", {"despite": "1"})
    assert MemoryVersion.objects.get(item_id=memory_id).status == "checks_failed"

    page = rita.get(f"/memories/{memory_id}/").content.decode()
    with commit():
        rejected = rita.post(f"/memories/{memory_id}/reject/", {"reason": "order-a was cancelled"})

    assert 'id="reject-h">Reject</h2>' in page
    assert rejected.status_code == 302
    assert MemoryVersion.objects.get(item_id=memory_id).status == "rejected"


def _propose_note(demo: Demo, commit: Any, value: str) -> str:
    """A note for order-a's delivery, proposed by the agent: a task fact, so reviewed."""
    with commit():
        version = demo.order_a_fact("delivery_note", value, f"Order order-a's note: {value}.")
    return version.item_id


def test_a_preview_a_tie_made_stale_is_not_shown_as_passed_nor_approved_in_bulk(
    demo: Demo, commit: Any
) -> None:
    """Two notes for Dana pass their previews while neither is in use; once one becomes
    active the other's "passed" is no longer true: the queue says so and reruns it, and
    bulk approval leaves it out instead of sending a tie to its checks."""
    ring, door = (
        _propose_note(demo, commit, "ring twice"),
        _propose_note(demo, commit, "at the door"),
    )
    rita = demo.client("rita")
    assert "passed" in _row(rita.get("/").content.decode(), door)
    with commit():
        rita.post("/queue/approve/", {"only": ring})
    assert MemoryVersion.objects.get(item_id=ring).status == "active"

    row = _row(rita.get("/").content.decode(), door)  # it asks for a rerun, not run yet
    response = rita.post("/queue/approve/", {"memory": [door]}, follow=True)

    assert "data-stale" in row and "out of date, running again" in row
    assert "passed" not in row
    [said] = [str(m) for m in response.context["messages"]]
    assert said == (
        "“Order order-a's note: at the door.”: left out, not approved: its preview is out of "
        "date (another memory of this field started being used since it ran) and is "
        "running again. Approve it once the new result is shown."
    )
    assert _approvals(door) == 0
    # Once the rerun the queue asked for has run, the tie is on the row, as a failure.
    with commit():
        outbox_sweep(older_than=timedelta(0))
    rerun = _row(rita.get("/").content.decode(), door)
    assert "data-stale" not in rerun and "failed" in rerun


def test_an_approval_from_a_page_that_showed_a_stale_preview_approves_nothing(
    demo: Demo, commit: Any
) -> None:
    ring, door = (
        _propose_note(demo, commit, "ring twice"),
        _propose_note(demo, commit, "at the door"),
    )
    rita = demo.client("rita")
    with commit():
        rita.post("/queue/approve/", {"only": ring})

    refused = rita.post(f"/memories/{door}/approve/", {"comment": "", "despite": "1"})

    assert refused.status_code == 409
    assert "its preview is out of date and is running again" in refused.content.decode()
    assert _approvals(door) == 0


def _row(body: str, memory_id: str) -> str:
    start = body.index(f'<tr data-memory="{memory_id}"')
    return body[start : body.index("</tr>", start)]
