"""Expiry (docs/design.md, Two times): ``expires_at`` is a governance limit. From that
instant the item is not used, whether or not the periodic task has marked it yet; the
task records it as ``expired`` and flags the tasks that were told about it."""

from __future__ import annotations

import time
from datetime import timedelta

from django.utils import timezone

from approvals import tasks
from memory.models import Status
from tests.approvals.support import Flow, head
from tests.conftest import iso

RENEWAL_3 = {"task": "renewal-3", "project": "P-9"}


def test_an_expired_fact_is_never_resolved_and_the_expiry_task_flags_its_tasks(flow: Flow):
    # Given a task fact whose approval lapses in a few seconds, active and used by a task
    # (seconds enough for the set-up on a loaded machine: a proposal must expire later).
    expires = timezone.now() + timedelta(seconds=6)
    record = flow.source("business_record", content="PO-7731 approved until the batch ships")
    fact = flow.propose("task_fact", RENEWAL_3, sources=[record], expires_at=iso(expires))
    flow.approve(fact["id"], "omar")
    lapsing = flow.propose(
        "task_fact", {"task": "renewal-4", "project": "P-9"}, expires_at=iso(expires)
    )
    assert flow.memory(fact["id"])["status"] == "active"
    assert flow.resolved_ids(RENEWAL_3, task_id="order-7731") == [fact["id"]]

    # When the time passes (real time: the cache's entry must not outlive it either).
    time.sleep(max(0.0, (expires - timezone.now()).total_seconds()) + 0.05)

    # Then it is not used, before the expiry task ran.
    assert head(fact["id"]).status == Status.ACTIVE
    body = flow.resolve(RENEWAL_3, fields=["material_checks"])
    assert body["facts"] == []
    assert [(a["field"], a["reason"]) for a in body["abstentions"]] == [
        ("material_checks", "no_applicable_fact")
    ]

    # And the expiry task records it, pending versions included, and flags the task.
    expired = tasks.expire_due_memory.apply().get()

    assert sorted(expired) == sorted([fact["id"], lapsing["id"]])
    after = flow.memory(fact["id"])
    assert (after["status"], after["deactivated_at"] is not None) == ("expired", True)
    assert flow.memory(lapsing["id"])["status"] == "expired"
    task = flow.ok(flow.get("agent", "/tasks/order-7731"))
    assert task["needs_reverification"] is True
    assert [(r["memory_id"], r["event"]) for r in task["reasons"]] == [(fact["id"], "expired")]
    assert tasks.expire_due_memory.apply().get() == []  # a second run changes nothing
