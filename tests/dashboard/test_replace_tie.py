"""Issue 37, point 5: replacing a tied memory retires the older one and sends the new one
to its checks in one step, or changes nothing: refused to whoever may not decide, for a
memory that does not tie, and while more approvals are wanted."""

from __future__ import annotations

from typing import Any

import pytest

from approvals import services
from approvals.models import Approval
from audit.models import AuditEvent
from core.errors import Conflict
from memory import proposals
from memory.models import MemoryItem, MemoryVersion
from tests.dashboard.support import Demo


def _tied(demo: Demo, capture: Any) -> MemoryVersion:
    home = demo.item("dana_home").versions.get()
    with capture(execute=True):
        return proposals.memory_propose(
            principal=demo.agent(),
            data={
                "kind": "preference",
                "subject": home.subject_id,
                "field": "delivery_address",
                "value": "7 Pier Lane",
                "statement": "Dana now wants deliveries at 7 Pier Lane.",
                "scope": {},
                "owner": "sam",
                "expires_at": None,
                "sources": home.source_ids,
            },
        )


def test_sam_who_may_not_decide_cannot_replace_and_sees_no_button(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    new = _tied(demo, django_capture_on_commit_callbacks)
    sam = demo.client("sam")
    page = sam.get(f"/memories/{new.item_id}/").content.decode()

    response = sam.post(f"/memories/{new.item_id}/replace/", {"older": demo.items["dana_home"]})

    assert "Would tie with" in page
    assert "Activate this and retire the older one" not in page
    assert response.status_code == 403
    assert MemoryVersion.objects.get(item_id=demo.items["dana_home"]).status == "active"


def test_a_memory_that_does_not_tie_is_not_retired(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    new = _tied(demo, django_capture_on_commit_callbacks)
    rita = demo.client("rita")
    assert (
        "Activate this and retire the older one"
        in rita.get(f"/memories/{new.item_id}/").content.decode()
    )

    response = rita.post(f"/memories/{new.item_id}/replace/", {"older": demo.items["sarah_nova"]})

    assert response.status_code == 409
    assert "no longer ties with this one" in response.content.decode()
    assert MemoryVersion.objects.get(item_id=demo.items["sarah_nova"]).status == "active"


def test_rita_replaces_the_tied_memory_and_both_changes_land_together(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    new = _tied(demo, django_capture_on_commit_callbacks)  # its gate checks failed on the tie
    older_id = demo.items["dana_home"]

    response = demo.client("rita").post(f"/memories/{new.item_id}/replace/", {"older": older_id})

    assert response.status_code == 302
    new.refresh_from_db()
    assert new.status == "checking"
    assert MemoryVersion.objects.get(item_id=older_id).status == "retired"
    by_rita = AuditEvent.objects.filter(actor="user:rita")
    assert by_rita.filter(target_id=older_id, action="memory.retired").exists()
    assert by_rita.filter(target_id=new.item_id, action="memory.checking").exists()


def test_a_rule_still_wanting_an_approval_replaces_nothing(demo: Demo) -> None:
    rule = demo.item("p9_rule")  # an enterprise rule: two approvals, rita's is the first

    with pytest.raises(Conflict, match="not the last one this version needs"):
        services.memory_replace(
            principal=demo.principal("rita"),
            item=rule,
            older=demo.item("dana_home"),
            comment="replaces",
        )

    assert MemoryVersion.objects.get(item_id=demo.items["dana_home"]).status == "active"
    assert rule.versions.get().status == "pending_review"
    assert not Approval.objects.filter(version__item=rule).exists()


def test_an_older_memory_that_cannot_be_retired_leaves_the_recheck_undone(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    new = _tied(demo, django_capture_on_commit_callbacks)
    older = demo.item("dana_home")
    services.memory_retire(principal=demo.principal("rita"), item=older, reason="moved away")

    with pytest.raises(Conflict, match="Nothing to retire"):
        services.memory_replace(
            principal=demo.principal("rita"), item=new.item, older=older, comment="replaces"
        )

    new.refresh_from_db()
    assert new.status == "checks_failed"
    assert not AuditEvent.objects.filter(target_id=new.item_id, actor="user:rita").exists()


def _rival_rule(demo: Demo, capture: Any) -> tuple[MemoryItem, MemoryVersion]:
    """PP-4's tenant-wide rule in force (rita and lena approved it), and a rule proposed
    against it: tenant-wide too, another value, so the two would tie."""
    in_force = demo.item("tenant_rule")
    with capture(execute=True):
        for reviewer in ("rita", "lena"):
            services.version_approve(
                principal=demo.principal(reviewer), item=in_force, comment="PP-4 holds"
            )
    head = in_force.versions.get()
    assert head.status == "active"
    with capture(execute=True):
        rival = proposals.memory_propose(
            principal=demo.agent(),
            data={
                "kind": "enterprise_rule",
                "subject": head.subject_id,
                "field": "material_checks",
                "value": "waived",
                "statement": "Supplier material checks are waived.",
                "scope": {"tenant": "*"},
                "owner": "rita",
                "expires_at": head.expires_at,
                "sources": head.source_ids,
                "basis": {"ref": "PP-4"},
            },
        )
    return in_force, rival


def test_the_last_approver_of_a_tied_rule_replaces_the_rule_in_force(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    in_force, rival = _rival_rule(demo, django_capture_on_commit_callbacks)
    page = f"/memories/{rival.item_id}/"
    lena, rita = demo.client("lena"), demo.client("rita")

    first = lena.get(page).content.decode()
    # The preview shows the tie: an approval counts only with its failures confirmed.
    lena.post(f"{page}approve/", {"comment": "waiver agreed", "despite": "1"})
    last = rita.get(page).content.decode()
    replaced = rita.post(f"{page}replace/", {"older": in_force.pk})

    assert "Would tie with" in first
    assert "Activate this and retire the older one" not in first
    assert "The reviewer whose approval completes this version can replace" in first
    assert "Activate this and retire the older one" in last
    assert replaced.status_code == 302
    rival.refresh_from_db()
    assert rival.status == "checking"
    assert in_force.versions.get().status == "retired"
    assert Approval.objects.filter(version=rival).count() == 2


def test_a_last_approver_who_may_not_retire_the_rule_in_force_is_told_so(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    in_force, rival = _rival_rule(demo, django_capture_on_commit_callbacks)
    page = f"/memories/{rival.item_id}/"
    demo.client("rita").post(f"{page}approve/", {"comment": "waiver agreed", "despite": "1"})
    lena = demo.client("lena")  # approves tenant-wide rules, retires nothing

    shown = lena.get(page).content.decode()
    refused = lena.post(f"{page}replace/", {"older": in_force.pk})

    assert "Activate this and retire the older one" not in shown
    assert "also needs authority to retire it, which you do not have" in shown
    assert refused.status_code == 403
    rival.refresh_from_db()
    assert rival.status == "pending_review"
    assert Approval.objects.filter(version=rival).count() == 1
    assert in_force.versions.get().status == "active"
