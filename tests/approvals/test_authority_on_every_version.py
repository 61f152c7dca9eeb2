"""Retiring and revoking need authority over every version they end (issue 33, point 6).

Retirement ends every version in use or open, and a revocation every version citing the
source; authority over the head (or one version per item) is not authority over the rest.
The story: an active rule for project P-10; an agent files a correction scoping it to
P-9. Omar may retire memories of P-9 only: the correction must not carry the P-10 rule
out of use, through the API, the dashboard or the admin. A refusal changes nothing and
audits nothing as done."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from memory.models import MemoryVersion, Source, Status
from tests.approvals.support import Flow

P9 = {"project": "P-9"}
P10 = {"project": "P-10"}


def p10_rule_with_a_p9_correction(flow: Flow, memo: str) -> str:
    """An active P-10 rule on ``memo`` whose pending correction (by the agent) says P-9."""
    memory = flow.active_rule(P10, sources=[memo])
    flow.correct(memory["id"], 1, scope=P9, sources=[memo])
    return str(memory["id"])


def statuses(memory_id: str) -> list[str]:
    versions = MemoryVersion.objects.filter(item_id=memory_id).order_by("number")
    return [v.status for v in versions]


def audited(action: str, target_id: str) -> bool:
    return AuditEvent.objects.filter(action=action, target_id=target_id).exists()


def dashboard(flow: Flow, who: str) -> Client:
    client = Client()
    client.force_login(flow.world.users[who], backend="django.contrib.auth.backends.ModelBackend")
    return client


def committed(flow: Flow, send: Any) -> Any:
    assert flow.on_commit is not None
    with flow.on_commit(execute=True):
        return send()


def test_reviewer_of_p9_cannot_retire_a_p10_rule_through_a_p9_correction(flow: Flow):
    memo = flow.source("approval_record")
    memory_id = p10_rule_with_a_p9_correction(flow, memo)
    assert statuses(memory_id) == [Status.ACTIVE, Status.PENDING_REVIEW]

    response = flow.retire(memory_id, who="omar")

    assert response.status_code == 403
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["detail"] == (
        "Retiring this memory needs retire_memory over its scope. "
        "It would also end v1, whose scope is outside your authority."
    )
    assert statuses(memory_id) == [Status.ACTIVE, Status.PENDING_REVIEW]
    assert not audited("memory.retired", memory_id)
    assert flow.resolved_ids(P10) == [memory_id]


def test_reviewer_of_p9_cannot_retire_it_from_the_dashboard_either(flow: Flow):
    memo = flow.source("approval_record")
    memory_id = p10_rule_with_a_p9_correction(flow, memo)

    response = dashboard(flow, "omar").post(
        f"/memories/{memory_id}/retire/", {"reason": "withdrawn", "in_flight": "continue"}
    )

    assert response.status_code == 403
    assert "retire_memory" in response.content.decode()
    assert statuses(memory_id) == [Status.ACTIVE, Status.PENDING_REVIEW]
    assert not audited("memory.retired", memory_id)


def test_reviewer_of_p9_cannot_retire_it_from_the_admin_either(flow: Flow):
    memo = flow.source("approval_record")
    memory_id = p10_rule_with_a_p9_correction(flow, memo)
    User.objects.filter(pk=flow.world.users["omar"].pk).update(is_staff=True, is_superuser=True)
    action = {"action": "retire_selected", "_selected_action": [memory_id]}

    done = dashboard(flow, "omar").post(
        reverse("admin:memory_memoryitem_changelist"),
        {**action, "apply": "Retire memories", "reason": "withdrawn"},
        follow=True,
    )

    [message] = [str(m) for m in done.context["messages"]]
    assert message.startswith(f"{memory_id}: Retiring this memory needs retire_memory")
    assert statuses(memory_id) == [Status.ACTIVE, Status.PENDING_REVIEW]
    assert not audited("memory.retired", memory_id)


def test_the_item_page_offers_retire_only_with_authority_over_every_version(flow: Flow):
    memo = flow.source("approval_record")
    memory_id = p10_rule_with_a_p9_correction(flow, memo)
    form = f'action="/memories/{memory_id}/retire/"'

    for_omar = dashboard(flow, "omar").get(f"/memories/{memory_id}/").content.decode()
    for_rita = dashboard(flow, "rita").get(f"/memories/{memory_id}/").content.decode()

    assert form not in for_omar
    assert form in for_rita


def test_a_reviewer_of_both_projects_retires_the_rule_and_its_correction(flow: Flow):
    memo = flow.source("approval_record")
    memory_id = p10_rule_with_a_p9_correction(flow, memo)

    api = flow.retire(memory_id, who="rita")

    assert flow.ok(api)["memory"]["status"] == "retired"
    assert statuses(memory_id) == [Status.RETIRED, Status.RETIRED]
    assert audited("memory.retired", memory_id)
    assert flow.resolved_ids(P10) == []


def test_a_p9_reviewer_still_retires_a_p9_rule_corrected_within_p9(flow: Flow):
    memo = flow.source("approval_record")
    memory = flow.active_rule(P9, sources=[memo])
    flow.correct(memory["id"], 1, scope={"project": "P-9", "task": "renewal-3"})

    response = committed(
        flow,
        lambda: dashboard(flow, "omar").post(
            f"/memories/{memory['id']}/retire/", {"reason": "withdrawn", "in_flight": "continue"}
        ),
    )

    assert response.status_code == 302
    assert statuses(memory["id"]) == [Status.RETIRED, Status.RETIRED]


def test_reviewer_of_p9_cannot_revoke_the_memo_of_a_p10_rule_through_a_p9_correction(
    flow: Flow,
):
    memo = flow.source("approval_record")
    memory_id = p10_rule_with_a_p9_correction(flow, memo)

    refused = flow.post("omar", f"/sources/{memo}/revoke", {"reason": "withdrawn"})
    from_dashboard = dashboard(flow, "omar").post(
        f"/sources/{memo}/revoke/", {"memory": memory_id, "reason": "withdrawn"}
    )

    assert refused.status_code == 403
    assert refused["Content-Type"] == "application/problem+json"
    assert from_dashboard.status_code == 403
    assert Source.objects.get(pk=memo).revoked_at is None
    assert statuses(memory_id) == [Status.ACTIVE, Status.PENDING_REVIEW]
    assert not audited("source.revoked", memo)
    assert not audited("memory.retired", memory_id)


def test_a_reviewer_of_both_projects_revokes_the_memo_and_ends_both_versions(flow: Flow):
    memo = flow.source("approval_record")
    memory_id = p10_rule_with_a_p9_correction(flow, memo)

    body = flow.ok(flow.post("rita", f"/sources/{memo}/revoke", {"reason": "withdrawn"}))

    assert body["memories"] == [memory_id]
    assert statuses(memory_id) == [Status.RETIRED, Status.RETIRED]
    assert audited("source.revoked", memo)


def test_a_p9_reviewer_revokes_a_memo_only_p9_versions_cite(flow: Flow):
    memo = flow.source("approval_record")
    memory = flow.active_rule(P9, sources=[memo])
    flow.correct(memory["id"], 1, scope={"project": "P-9", "task": "renewal-3"}, sources=[memo])

    body = flow.ok(flow.post("omar", f"/sources/{memo}/revoke", {"reason": "withdrawn"}))

    assert body["memories"] == [memory["id"]]
    assert statuses(memory["id"]) == [Status.RETIRED, Status.RETIRED]
