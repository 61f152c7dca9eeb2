"""Retirement and source revocation (docs/design.md, Lifecycle; seed 001, "When a rule is
retired"): use ends before the call returns, caches included; tasks that were told
about the item must re-verify unless the caller says ``continue``; history is kept."""

from __future__ import annotations

from django.core import mail

from audit.models import AuditEvent
from memory.models import Source
from tests.approvals.support import Flow, head, moment, person

P9 = {"project": "P-9"}


def test_retiring_ends_use_at_once_and_flags_the_tasks_that_used_it(flow: Flow):
    memory = flow.active_rule(P9)
    assert flow.resolved_ids(P9, task_id="renewal-3") == [memory["id"]]
    assert flow.resolved_ids(P9) == [memory["id"]]  # and cached, where a cache runs

    response = flow.retire(memory["id"], reason="APR-2291 was withdrawn")

    body = flow.ok(response)
    assert body["flagged_tasks"] == ["renewal-3"]
    assert body["memory"]["status"] == "retired"
    assert moment(body["memory"]["deactivated_at"]) == head(memory["id"]).deactivated_at
    assert body["memory"]["deactivated_at"] is not None
    assert flow.resolved_ids(P9) == []
    task = flow.ok(flow.get("agent", "/tasks/renewal-3"))
    assert task["needs_reverification"] is True
    assert [(r["memory_id"], r["event"], r["reason"]) for r in task["reasons"]] == [
        (memory["id"], "retired", "APR-2291 was withdrawn")
    ]
    assert [(u["memory_id"], u["status_now"]) for u in task["used"]] == [(memory["id"], "retired")]


def test_retiring_with_in_flight_continue_leaves_running_tasks_alone(flow: Flow):
    memory = flow.active_rule(P9)
    flow.resolve(P9, task_id="renewal-3")

    body = flow.ok(flow.retire(memory["id"], in_flight="continue"))

    assert body["flagged_tasks"] == []
    assert flow.resolved_ids(P9) == []
    task = flow.ok(flow.get("agent", "/tasks/renewal-3"))
    assert (task["needs_reverification"], task["reasons"]) == (False, [])


def test_retirement_keeps_the_history_and_the_audit_trail(flow: Flow):
    memory = flow.active_rule(P9)

    flow.ok(flow.retire(memory["id"]))

    versions = flow.ok(flow.get("rita", f"/memories/{memory['id']}/versions"))
    assert [(v["version"], v["status"]) for v in versions] == [(1, "retired")]
    actions = list(
        AuditEvent.objects.filter(target_id=memory["id"]).values_list("action", flat=True)
    )
    assert actions[-1] == "memory.retired"
    assert actions.count("memory.active") == 1


def test_retiring_an_item_with_a_pending_correction_retires_both_versions(flow: Flow):
    memory = flow.active_rule(P9)
    correction = {"value": "follow exception APR-2291 v4"}
    flow.correct(memory["id"], 1, **correction)

    flow.ok(flow.retire(memory["id"]))

    versions = flow.ok(flow.get("rita", f"/memories/{memory['id']}/versions"))
    assert [(v["version"], v["status"]) for v in versions] == [(1, "retired"), (2, "retired")]
    assert flow.post("rita", f"/memories/{memory['id']}/approve", {}).status_code == 409


def test_the_owner_of_a_preference_may_retire_it_and_nobody_else_without_authority(flow: Flow):
    person(flow.world, "pia")  # no grants, not the owner
    memory = flow.propose("preference", {}, owner="nora", field="report_format", value="tables")
    assert flow.memory(memory["id"])["status"] == "active"

    refused = [flow.retire(memory["id"], who=who).status_code for who in ("pia", "agent")]
    allowed = flow.retire(memory["id"], who="nora")

    assert refused == [403, 403]
    assert flow.ok(allowed)["memory"]["status"] == "retired"


def test_the_owner_of_a_rule_needs_retire_memory_like_anyone_else(flow: Flow):
    memory = flow.active_rule(P9, owner="nora")

    response = flow.retire(memory["id"], who="nora")

    assert response.status_code == 403
    assert flow.memory(memory["id"])["status"] == "active"


def test_the_owner_is_told_by_email_that_the_item_was_retired(flow: Flow):
    memory = flow.active_rule(P9, owner="lena")
    mail.outbox.clear()

    flow.ok(flow.retire(memory["id"], reason="APR-2291 was withdrawn"))

    [email] = mail.outbox
    assert email.to == ["lena@example.com"]
    assert email.subject == "[Memgov] Retired: “Renewals follow exception APR-2291.”"
    assert "Reason: APR-2291 was withdrawn" in email.body
    assert email.alternatives[0][1] == "text/html"  # type: ignore[attr-defined]


# --- source revocation (the basis was withdrawn) -----------------------------------------


def test_revoking_a_source_retires_every_active_or_pending_version_citing_it(flow: Flow):
    approval = flow.source("approval_record", content="APR-2291 v3")
    other = flow.source("approval_record", content="APR-3300 v1")
    active = flow.active_rule(P9, sources=[approval])
    pending = flow.rule({"project": "P-10"}, sources=[approval])
    rejected = flow.rule({"project": "P-11"}, sources=[approval])
    flow.ok(flow.post("rita", f"/memories/{rejected['id']}/reject", {"reason": "no"}))
    unrelated = flow.active_rule({"project": "P-12"}, sources=[other])
    flow.resolve(P9, task_id="renewal-3")

    response = flow.post("rita", f"/sources/{approval}/revoke", {"reason": "APR-2291 withdrawn"})

    body = flow.ok(response)
    assert body["memories"] == sorted([active["id"], pending["id"]])
    assert body["revoked_at"] is not None
    assert Source.objects.get(pk=approval).revoked_at is not None
    everyone = (active, pending, rejected, unrelated)
    assert {m["id"]: flow.memory(m["id"])["status"] for m in everyone} == {
        active["id"]: "retired",
        pending["id"]: "retired",
        rejected["id"]: "rejected",
        unrelated["id"]: "active",
    }
    assert flow.resolved_ids(P9) == []
    task = flow.ok(flow.get("agent", "/tasks/renewal-3"))
    assert task["needs_reverification"] is True
    [reason] = task["reasons"]
    assert (reason["memory_id"], reason["event"]) == (active["id"], "retired")
    assert reason["reason"] == f"source {approval} revoked: APR-2291 withdrawn"


def test_a_revoked_source_cannot_back_a_new_proposal(flow: Flow):
    approval = flow.source("approval_record")
    flow.ok(flow.post("rita", f"/sources/{approval}/revoke", {"reason": "withdrawn"}))

    response = flow.post("agent", "/memories", flow.body("enterprise_rule", P9, sources=[approval]))

    assert response.status_code == 422
    assert "sources" in response.json()["errors"]


def test_revoking_a_source_nothing_cites_still_needs_tenant_wide_retire_memory(flow: Flow):
    approval = flow.source("approval_record")

    refused = flow.post("omar", f"/sources/{approval}/revoke", {"reason": "withdrawn"})
    allowed = flow.post("rita", f"/sources/{approval}/revoke", {"reason": "withdrawn"})

    assert refused.status_code == 403
    assert flow.ok(allowed)["memories"] == []
