"""Activation is serialized per (tenant, subject, field) (issue 9, point 6): two items of
one field whose gate runs both passed, concluded at the same time, must not both become
active into a conflict. Real PostgreSQL, real commits, two threads."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from approvals import checking, services
from approvals.models import CheckResult
from memory.models import MemoryVersion, Status
from tests.approvals.support import Flow, head
from tests.conftest import World, needs
from tests.integration.test_pg_concurrency import together

pytestmark = [needs("postgres"), pytest.mark.django_db(transaction=True)]
P9 = {"project": "P-9"}


def test_two_conflicting_rules_approved_at_once_never_both_become_active(
    world: World, monkeypatch: pytest.MonkeyPatch
):
    flow = Flow(world=world)
    # Given two P-9 rules of one field with different values, both approved: their gate
    # runs are left for the two threads below (nothing is handed to Celery on commit).
    monkeypatch.setattr(services, "after_checks_requested", lambda version: None)
    first = flow.rule(P9, value="check every delivery")["id"]
    second = flow.rule(P9, value="check one delivery in ten")["id"]
    for memory_id in (first, second):
        flow.approve(memory_id, "rita", "lena")
        assert head(memory_id).status == Status.CHECKING

    # When both gate runs pass (each before the other is active) and then conclude at once.
    both_evaluated = threading.Barrier(2)
    run = checking.checks_run

    def run_then_wait(**kwargs: Any) -> Any:
        result = run(**kwargs)
        both_evaluated.wait(timeout=30)
        return result

    monkeypatch.setattr(checking, "checks_run", run_then_wait)
    together([lambda: checking.gate(head(first).pk), lambda: checking.gate(head(second).pk)])

    # Then one is active and the other failed its regression check under the lock.
    versions = {v.item_id: v for v in MemoryVersion.objects.filter(item_id__in=[first, second])}
    statuses = sorted(v.status for v in versions.values())
    assert statuses == [Status.ACTIVE, Status.CHECKS_FAILED]
    [loser] = [v for v in versions.values() if v.status == Status.CHECKS_FAILED]
    assert loser.status_reason.startswith("regression: ")
    assert "activation would create a conflict" in loser.status_reason
    failed = CheckResult.objects.filter(version=loser, run="gate", outcome="failed")
    assert [r.scenario["kind"] for r in failed] == ["regression"]
    assert len(flow.resolved_ids(P9)) == 1
