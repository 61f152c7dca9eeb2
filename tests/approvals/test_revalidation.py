"""Re-validation (docs/design.md, Resolver and policy; seed 001: when the model, prompt,
retrieval or tools change, important rules must be re-validated). Publishing a policy or
declaring a change re-runs the checks of every active item and flags those that fail."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from kombu.exceptions import OperationalError

from accounts.tenancy import tenant_update_settings
from approvals import checking, revalidation
from approvals.models import CheckResult, Revalidation
from audit.models import AuditEvent
from config.celery import app as celery_app
from core import outbox, redis_client
from core.models import Outbox
from memory import generations
from memory.models import Policy
from tests.approvals.support import Flow, person
from tests.conftest import needs

P9 = {"project": "P-9"}
# Without the verification criterion a verified_record rule no longer outranks a confirmed
# one of the same scope: the two P-9 rules below then tie with different values.
NO_VERIFICATION = {"order": ["specificity", "kind", "valid_from"]}


def two_ranked_rules_and_one_alone(flow: Flow) -> tuple[str, str, str]:
    confirmed = flow.active_rule(P9, value="check every delivery")["id"]
    record = flow.source("business_record", content="PO-7731 v3: exception granted.")
    verified = flow.active_rule(P9, sources=[record])["id"]
    alone = flow.active_rule({"project": "P-10"})["id"]
    return confirmed, verified, alone


def test_publishing_a_policy_needs_manage_policy(flow: Flow):
    for who in ("agent", "omar", "lena", "nora"):
        response = flow.post(who, "/policy", {"precedence": NO_VERIFICATION, "reason": "try"})
        assert response.status_code == 403, who
    assert Policy.objects.filter(tenant=flow.world.tenant).count() == 1
    assert Revalidation.objects.count() == 0


def test_an_invalid_precedence_is_a_422_and_publishes_nothing(flow: Flow):
    response = flow.post("rita", "/policy", {"precedence": {"order": ["seniority"]}, "reason": "x"})

    assert response.status_code == 422
    assert "precedence" in response.json()["errors"]
    assert flow.ok(flow.get("agent", "/policy"))["version"] == "1"
    assert Revalidation.objects.count() == 0


def test_a_new_policy_is_a_new_version_and_a_flag_tenant_only_flags_what_now_fails(
    flow: Flow, django_capture_on_commit_callbacks
):
    # Given a tenant whose setting keeps failing items in use (``flag``).
    tenant_update_settings(tenant=flow.world.tenant, revalidation_failure="flag")
    confirmed, verified, alone = two_ranked_rules_and_one_alone(flow)
    mail.outbox.clear()
    body = {"precedence": NO_VERIFICATION, "reason": "verification is not a rank any more"}

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = flow.uncommitted("rita", "/policy", body)

    published = flow.ok(response, 201)
    assert published["version"] == "2"
    assert flow.ok(flow.get("agent", "/policy"))["version"] == "2"
    job = published["revalidation"]
    running = flow.ok(flow.get("rita", f"/revalidations/{job}"))
    # Three active items, superseded versions are not re-checked; nothing ran yet.
    assert (running["status"], running["total"], running["done"]) == ("running", 3, 0)

    with django_capture_on_commit_callbacks(execute=True):
        for callback in callbacks:  # the commit dispatches the outbox row (eager Celery)
            callback()

    done = flow.ok(flow.get("rita", f"/revalidations/{job}"))
    assert (done["status"], done["total"], done["done"], done["failed"]) == ("done", 3, 3, 2)
    assert done["flagged"] == sorted([confirmed, verified])
    assert done["policy_version"] == "2"
    # Owner and reviewers of each (rita owns; lena and omar review P-9 rules). Each chunk of
    # the job reports its own failures (an event each), here one memory per chunk.
    # One email per person for the job's chunk, naming both flagged memories.
    assert sorted(m.to[0] for m in mail.outbox) == sorted(
        ["rita@example.com", "lena@example.com", "omar@example.com"]
    )
    assert {m.subject for m in mail.outbox} == {"[Memgov] Re-validation failed for 2 memories"}
    assert all(confirmed in m.body and verified in m.body for m in mail.outbox)
    assert [flow.memory(m)["status"] for m in (confirmed, verified, alone)] == 3 * ["active"]


def test_an_item_failing_revalidation_is_suspended_until_the_cause_is_fixed_and_rechecked(
    flow: Flow,
):
    # Given the verified P-9 rule (proposed first, so checked first) wins over the confirmed
    # one under policy 1.
    record = flow.source("business_record", content="PO-7731 v3: exception granted.")
    verified = flow.rule(P9, sources=[record])["id"]
    confirmed = flow.active_rule(P9, value="check every delivery")["id"]
    flow.approve(verified, "rita", "lena")
    assert flow.resolved_ids(P9, task_id="renewal-42") == [verified]
    first_policy = flow.ok(flow.get("rita", "/policy"))["precedence"]
    mail.outbox.clear()

    # When a policy without the verification rank is published: the two now tie.
    body = {"precedence": NO_VERIFICATION, "reason": "verification is not a rank any more"}
    job = flow.ok(flow.post("rita", "/policy", body), 201)["revalidation"]

    # Then the first one checked fails and is suspended; the other then resolves alone.
    done = flow.ok(flow.get("rita", f"/revalidations/{job}"))
    assert (done["status"], done["done"], done["failed"], done["flagged"]) == (
        "done",
        2,
        1,
        [verified],
    )
    memory = flow.memory(verified)
    assert (memory["status"], memory["status_reason"]) == ("checks_failed", "revalidation")
    assert memory["checks"]["status"] == "failed"
    assert memory["checks"]["failed"] >= 1
    assert flow.resolved_ids(P9) == [confirmed]
    task = flow.ok(flow.get("agent", "/tasks/renewal-42"))
    assert task["needs_reverification"] is True
    assert [(r["memory_id"], r["event"]) for r in task["reasons"]] == [(verified, "suspended")]
    suspension = AuditEvent.objects.get(target_id=verified, action="memory.checks_failed")
    assert (suspension.data["from"], suspension.data["revalidation"]) == ("active", job)
    assert sorted(m.to[0] for m in mail.outbox) == [
        "lena@example.com",
        "omar@example.com",
        "rita@example.com",
    ]
    assert {m.subject for m in mail.outbox} == {
        "[Memgov] Re-validation suspended: “Renewals follow exception APR-2291.”"
    }
    assert "It is suspended" in mail.outbox[0].body

    # When the verification rank is restored and a reviewer rechecks the suspended rule.
    flow.ok(flow.post("rita", "/policy", {"precedence": first_policy, "reason": "back"}), 201)
    assert flow.ok(flow.post("rita", f"/memories/{verified}/recheck"))["status"] == "checking"

    # Then it passed the gate again and agents get it again.
    rechecked = flow.memory(verified)
    assert (rechecked["status"], rechecked["status_reason"]) == (
        "active",
        "all scenario checks passed",
    )
    assert rechecked["checks"]["status"] == "passed"
    assert flow.resolved_ids(P9) == [verified]


@needs("redis")
def test_suspension_releases_the_subjects_cache_generation_after_its_commit(flow: Flow):
    record = flow.source("business_record", content="PO-7731 v3: exception granted.")
    verified = flow.rule(P9, sources=[record])["id"]
    flow.active_rule(P9, value="check every delivery")
    flow.approve(verified, "rita", "lena")
    subject_key = generations.subject_generation_key(flow.world.tenant.pk, flow.subject())
    redis = redis_client.redis_client()
    before = int(redis.get(subject_key) or 0)

    flow.post("rita", "/policy", {"precedence": NO_VERIFICATION, "reason": "tie"})

    assert flow.memory(verified)["status"] == "checks_failed"
    # Held before the commit and released after it: moved on twice, and no hold is left.
    assert int(redis.get(subject_key) or 0) >= before + 2
    assert redis.zcard(f"{subject_key}:hold") == 0


def test_an_agent_sees_the_progress_and_counts_of_a_revalidation_but_not_which_memories(
    flow: Flow,
):
    shadowed, _, _ = two_ranked_rules_and_one_alone(flow)
    person(flow.world, "vera", "view_audit")
    job = flow.ok(flow.post("rita", "/policy/revalidate", {"reason": "prompt changed"}), 202)
    path = f"/revalidations/{job['revalidation']}"

    seen_by_agent = flow.ok(flow.get("agent", path))
    seen_by_rita = flow.ok(flow.get("rita", path))
    seen_by_nora = flow.ok(flow.get("nora", path))

    seen_by_auditor = flow.ok(flow.get("vera", path))

    assert "flagged" not in seen_by_agent
    assert "flagged" not in seen_by_nora
    assert seen_by_auditor["flagged"] == [shadowed]
    assert (seen_by_agent["status"], seen_by_agent["done"], seen_by_agent["failed"]) == (
        "done",
        3,
        1,
    )
    assert seen_by_rita["flagged"] == [shadowed]


def test_declaring_a_model_change_revalidates_every_active_item(flow: Flow):
    p9 = flow.active_rule(P9)["id"]
    p10 = flow.active_rule({"project": "P-10"})["id"]

    response = flow.post("rita", "/policy/revalidate", {"reason": "model changed"})

    assert response.status_code == 202
    job = response.json()["revalidation"]
    done = flow.ok(flow.get("rita", f"/revalidations/{job}"))
    assert (done["status"], done["total"], done["done"], done["failed"], done["flagged"]) == (
        "done",
        2,
        2,
        0,
        [],
    )
    assert done["policy_version"] == "1"
    assert [flow.memory(m)["status"] for m in (p9, p10)] == ["active", "active"]
    assert flow.get("zed", f"/revalidations/{job}").status_code == 404


def test_declaring_a_model_change_needs_manage_policy(flow: Flow):
    for who in ("agent", "omar", "lena", "nora"):
        assert flow.post(who, "/policy/revalidate", {"reason": "x"}).status_code == 403, who
    assert Revalidation.objects.count() == 0


def test_a_rule_shadowed_by_a_stronger_one_is_suspended(flow: Flow):
    # The stronger rule's activation reported the changed winner as impact; afterwards the
    # weaker one is never selected in its own scope, so its applicable check fails.
    shadowed, _, _ = two_ranked_rules_and_one_alone(flow)

    job = flow.ok(flow.post("rita", "/policy/revalidate", {"reason": "prompt changed"}), 202)

    done = flow.ok(flow.get("rita", f"/revalidations/{job['revalidation']}"))
    assert (done["done"], done["failed"], done["flagged"]) == (3, 1, [shadowed])
    assert flow.memory(shadowed)["status"] == "checks_failed"


class WorkerLost(Exception):
    """What the broker sees when a worker dies mid-task: the message comes back."""


def test_a_chunk_redelivered_after_a_crash_counts_each_item_once_and_finishes(
    flow: Flow, monkeypatch
):
    first = flow.active_rule(P9)["id"]
    second = flow.active_rule({"project": "P-10"})["id"]
    job = Revalidation.objects.get(pk=_started_without_dispatch(flow, "tools changed"))
    evaluate = checking.evaluate_current

    def dies_at_the_second_item(version):
        if version.item_id == second:
            raise WorkerLost("SIGKILL")
        return evaluate(version)

    # Given the first delivery checked the first item and died at the second.
    monkeypatch.setattr(checking, "evaluate_current", dies_at_the_second_item)
    with pytest.raises(WorkerLost):
        revalidation.revalidation_chunk(job_id=job.pk, version_ids=job.version_ids)
    monkeypatch.setattr(checking, "evaluate_current", evaluate)
    half = flow.ok(flow.get("rita", f"/revalidations/{job.pk}"))
    assert (half["status"], half["done"]) == ("running", 1)

    # When the broker delivers the chunk again.
    revalidation.revalidation_chunk(job_id=job.pk, version_ids=job.version_ids)

    # Then each item is counted once and the job is done.
    done = flow.ok(flow.get("rita", f"/revalidations/{job.pk}"))
    assert (done["status"], done["total"], done["done"], done["failed"]) == ("done", 2, 2, 0)
    rechecked = CheckResult.objects.filter(run=CheckResult.Run.REVALIDATION)
    assert sorted({r.version.item_id for r in rechecked}) == sorted([first, second])


def test_two_revalidations_running_at_once_each_count_every_item_and_finish(flow: Flow):
    """Publishing a policy and asking for a revalidation right after start two jobs under
    one policy version; they write the same check results, and each still counts its own."""
    flow.active_rule(P9)
    flow.active_rule({"project": "P-10"})
    first = Revalidation.objects.get(pk=_started_without_dispatch(flow, "tools changed"))
    second = Revalidation.objects.get(pk=_started_without_dispatch(flow, "prompt changed"))

    revalidation.revalidation_chunk(job_id=second.pk, version_ids=second.version_ids)
    revalidation.revalidation_chunk(job_id=first.pk, version_ids=first.version_ids)

    for job in (first, second):
        done = flow.ok(flow.get("rita", f"/revalidations/{job.pk}"))
        assert (done["status"], done["total"], done["done"]) == ("done", 2, 2), job.reason
    assert revalidation.revalidation_enqueue_missing(job_id=first.pk) == 0


def _started_without_dispatch(flow: Flow, reason: str) -> str:
    """A revalidation request whose commit hand-over (the outbox dispatch) never ran."""
    with flow.on_commit(execute=False):  # type: ignore[misc]
        response = flow.uncommitted("rita", "/policy/revalidate", {"reason": reason})
    return str(flow.ok(response, 202)["revalidation"])


def _revalidation_rows() -> Any:
    """The outbox rows that start revalidations (proposals write their own rows too)."""
    return Outbox.objects.filter(kind="revalidation.run")


def test_publishing_a_policy_records_policy_job_and_outbox_row_in_one_transaction(
    flow: Flow, django_capture_on_commit_callbacks
):
    flow.active_rule(P9)
    body = {"precedence": NO_VERIFICATION, "reason": "verification is not a rank any more"}

    with django_capture_on_commit_callbacks(execute=False):
        published = flow.ok(flow.uncommitted("rita", "/policy", body), 201)

    [row] = Outbox.objects.filter(kind="revalidation.run")
    assert (row.kind, row.payload, row.dispatched_at) == (
        "revalidation.run",
        {"job_id": published["revalidation"]},
        None,
    )
    assert Revalidation.objects.get(pk=published["revalidation"]).policy_version == "2"


def test_a_failed_outbox_write_publishes_no_policy_and_starts_no_job(flow: Flow, monkeypatch):
    flow.active_rule(P9)

    def broken_write(**_):
        raise RuntimeError("disk full")

    monkeypatch.setattr(revalidation, "outbox_write", broken_write)
    with pytest.raises(RuntimeError):
        revalidation.policy_publish_and_revalidate(
            principal=flow.world.principal("rita"), precedence=NO_VERIFICATION, reason="x"
        )

    assert list(Policy.objects.filter(tenant=flow.world.tenant).values_list("version")) == [(1,)]
    assert (Revalidation.objects.count(), _revalidation_rows().count()) == (0, 0)


def test_a_broker_down_at_commit_leaves_the_job_to_the_outbox_sweeper(flow: Flow, monkeypatch):
    shadowed, _, _ = two_ranked_rules_and_one_alone(flow)
    run = celery_app.tasks["approvals.tasks.revalidation_run"]

    def broker_down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to redis:6379. Connection refused.")

    # Given the broker refuses the hand-over when the request commits.
    monkeypatch.setattr(run, "apply_async", broker_down)
    job = flow.ok(flow.post("rita", "/policy/revalidate", {"reason": "model changed"}), 202)
    monkeypatch.undo()
    [row] = _revalidation_rows()
    assert (row.dispatched_at, row.attempts) == (None, 1)
    assert "Connection refused" in row.last_error
    waiting = flow.ok(flow.get("rita", f"/revalidations/{job['revalidation']}"))
    assert (waiting["status"], waiting["done"]) == ("running", 0)

    # When the broker is back and the beat sweeper runs.
    assert outbox.outbox_sweep(older_than=timedelta(0)) == [row.pk]

    # Then the job ran once, and a second sweep sends nothing again.
    done = flow.ok(flow.get("rita", f"/revalidations/{job['revalidation']}"))
    assert (done["status"], done["done"], done["flagged"]) == ("done", 3, [shadowed])
    assert _revalidation_rows().get().dispatched_at is not None
    # (the sweep ran the job outside a request: its failure email rows are swept now)
    assert row.pk not in outbox.outbox_sweep(older_than=timedelta(0))
    assert outbox.outbox_dispatch(row_id=row.pk) is False


def test_a_lost_chunk_is_resumed_by_the_sweeper_instead_of_running_forever(flow: Flow, monkeypatch):
    flow.active_rule(P9)
    flow.active_rule({"project": "P-10"})
    chunk = celery_app.tasks["approvals.tasks.revalidate_chunk"]
    lost: list[Any] = []

    # Given the chunk message is lost on its way (a broker that dropped it).
    monkeypatch.setattr(chunk, "delay", lambda *args: lost.append(args))
    job = flow.ok(flow.post("rita", "/policy/revalidate", {"reason": "model changed"}), 202)
    monkeypatch.undo()
    path = f"/revalidations/{job['revalidation']}"
    assert len(lost) == 1
    assert flow.ok(flow.get("rita", path))["status"] == "running"
    # Recently moved jobs are left alone.
    assert revalidation.revalidation_resume_stalled(stalled_after=timedelta(minutes=5)) == []

    # When the job has not moved for longer than the stall limit.
    resumed = revalidation.revalidation_resume_stalled(stalled_after=timedelta(0))

    # Then the missing chunk is enqueued again and the job finishes.
    assert resumed == [job["revalidation"]]
    done = flow.ok(flow.get("rita", path))
    assert (done["status"], done["total"], done["done"]) == ("done", 2, 2)
    assert revalidation.revalidation_resume_stalled(stalled_after=timedelta(0)) == []
