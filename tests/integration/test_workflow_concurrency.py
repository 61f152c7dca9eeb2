"""Twenty people decide on one version at once (docs/design.md, Lifecycle: transitions are
conditional updates on the locked row, each audited in the same transaction; no lost
update, no double activation). Real PostgreSQL, real threads, real commits: the gate
checks run after commit in the approving thread (Celery eager)."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from approvals import checking, checks
from approvals.models import Approval, CheckResult
from approvals.services import source_revoke, version_approve
from audit.models import AuditEvent
from audit.selectors import audit_verify
from audit.services import audit_append
from memory.models import MemoryItem, MemoryVersion, Source, Status
from memory.policy import policy_publish
from memory.selectors import current_policy, resolver_policy
from tests.approvals.support import Flow, head, person
from tests.conftest import World, needs

pytestmark = [needs("postgres"), pytest.mark.django_db(transaction=True)]

# Every transition the lifecycle diagram allows (docs/design.md), as (from, to).
LEGAL = {
    ("held_unresolved", "pending_review"),
    ("held_unresolved", "checking"),
    ("pending_review", "checking"),
    ("pending_review", "rejected"),
    ("checking", "active"),
    ("checking", "checks_failed"),
    ("checks_failed", "checking"),
    ("active", "superseded"),
    *(
        (s, "retired")
        for s in ("held_unresolved", "pending_review", "checking", "checks_failed", "active")
    ),
    *(
        (s, "superseded")
        for s in ("held_unresolved", "pending_review", "checking", "checks_failed")
    ),
    *(
        (s, "expired")
        for s in ("held_unresolved", "pending_review", "checking", "checks_failed", "active")
    ),
}
APPROVERS = [f"approver{i}" for i in range(1, 11)]
REJECTERS = [f"rejecter{i}" for i in range(1, 5)]
RETIRERS = [f"retirer{i}" for i in range(1, 7)]
# Twenty calls each. "balanced": seven people approve (two of them twice), four reject,
# one approver also rejects, six retire. "approvals": the correction already has one of
# its two approvals, ten people approve (two of them twice), four reject, four retire —
# so the gate's activation races the retirements.
MIXES = {
    "balanced": [
        *(("approve", who) for who in APPROVERS[:7]),
        ("approve", "approver1"),
        ("approve", "approver2"),
        *(("reject", who) for who in REJECTERS),
        ("reject", "approver3"),
        *(("retire", who) for who in RETIRERS),
    ],
    "approvals": [
        *(("approve", who) for who in APPROVERS),
        ("approve", "approver1"),
        ("approve", "approver2"),
        *(("reject", who) for who in REJECTERS),
        *(("retire", who) for who in RETIRERS[:4]),
    ],
}


@dataclass
class Answer:
    action: str
    who: str
    status: int


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def crowd(world: World) -> Flow:
    for name in APPROVERS + REJECTERS:
        person(world, name, "review_enterprise_rule")
    for name in RETIRERS:
        person(world, name, "retire_memory")
    return Flow(world=world)  # transaction=True: every call really commits


def all_at_once(flow: Flow, memory_id: str, calls: list[tuple[str, str]]) -> list[Answer]:
    barrier = threading.Barrier(len(calls))
    answers: list[Answer] = []
    lock = threading.Lock()

    def call(action: str, who: str) -> None:
        client = flow.world.client(who)
        body: dict[str, Any] = {"reason": f"{who} says no"} if action != "approve" else {}
        try:
            barrier.wait()
            response = client.post(f"/api/v1/memories/{memory_id}/{action}", body, format="json")
            with lock:
                answers.append(Answer(action, who, response.status_code))
        finally:
            connection.close()

    threads = [threading.Thread(target=call, args=call_args) for call_args in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    return answers


def transitions(memory_id: str, after_seq: int) -> list[tuple[int, str, str]]:
    """(version, from, to) of every status transition audited after ``after_seq``."""
    events = AuditEvent.objects.filter(
        target_id=memory_id, seq__gt=after_seq, data__has_key="from"
    ).order_by("seq")
    return [(e.data["version"], e.data["from"], e.data["to"]) for e in events]


def test_twenty_concurrent_decisions_leave_one_legal_audited_history(crowd: Flow):
    """Three rounds on three lineages of one tenant (one database setup for all)."""
    for mix, seed in (("balanced", 1), ("approvals", 2), ("approvals", 3)):
        one_round(crowd, mix, seed)
    assert audit_verify(tenant=crowd.world.tenant).ok  # concurrent appends never forked it


def one_round(crowd: Flow, mix: str, seed: int) -> None:
    # Given rule v1 in use and its correction v2 waiting for its approvals.
    memory = crowd.active_rule({"project": "P-9"})
    crowd.correct(memory["id"], 1, value="follow exception APR-2291 v4")
    if mix == "approvals":
        crowd.approve(memory["id"], "rita")
    start = AuditEvent.objects.filter(tenant=crowd.world.tenant).order_by("-seq").first()
    assert start is not None
    calls = list(MIXES[mix])
    assert len(calls) == 20
    random.Random(seed).shuffle(calls)

    # When twenty people approve, reject and retire it at the same instant.
    answers = all_at_once(crowd, memory["id"], calls)

    # Then every call was either done or refused as a conflict, never an error.
    assert len(answers) == 20
    assert {a.status for a in answers} <= {200, 409}, answers
    versions = {v.number: v for v in MemoryVersion.objects.filter(item_id=memory["id"])}
    # One retirement always succeeds (something is in use or open until it does), and
    # nothing can be activated after it: at the end nothing is in use.
    assert [n for n, v in versions.items() if v.status == Status.ACTIVE] == []
    # No double activation, ever: v2 became active at most once.
    history = transitions(memory["id"], start.seq)
    assert Counter(to for _, _, to in history)["active"] <= 1
    # No illegal transition, and each version's audited chain of transitions leads from
    # where it stood to where it stands: exactly one event per transition that happened.
    assert all((frm, to) in LEGAL for _, frm, to in history), history
    for number, initial in ((1, "active"), (2, "pending_review")):
        chain = [(frm, to) for n, frm, to in history if n == number]
        state = initial
        for frm, to in chain:
            assert frm == state, (number, chain)
            state = to
        assert state == versions[number].status, (number, chain)
        assert (versions[number].activated_at is not None) == (
            number == 1 or ("checking", "active") in chain
        )
    # Each recorded decision answered 200 once and was audited once.
    v2 = versions[2]
    decided = Counter(Approval.objects.filter(version=v2).values_list("decision", flat=True))
    ok = Counter(a.action for a in answers if a.status == 200)
    approved_events = AuditEvent.objects.filter(
        target_id=memory["id"], seq__gt=start.seq, action="memory.approved"
    ).count()
    assert (
        decided["approve"]
        == ok["approve"] + (mix == "approvals")
        == approved_events + (mix == "approvals")
    )
    assert decided["reject"] == ok["reject"] == Counter(to for _, _, to in history)["rejected"]
    assert ok["retire"] == 1
    assert len(set(Approval.objects.filter(version=v2).values_list("reviewer", flat=True))) == (
        sum(decided.values())
    )


# --- lock order: the audit chain head is taken last, and row locks leave foreign keys be --
#
# Every audited transaction ends by locking the tenant's audit chain head; a row it
# inserted that references another row (a check result → its version, an audit event →
# its tenant, a version → its sources) is checked by PostgreSQL at commit with a
# KEY SHARE lock on the referenced row. A transaction that locked that row FOR UPDATE and
# then waits for the chain head would deadlock with it.


def _lock_waiters() -> int:
    """Backends of this database blocked on a lock (the statistics snapshot a transaction
    keeps is dropped first, or the holder would never see the waiter arrive)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def holder_and_waiter(
    hold: Callable[[], object], wait: Callable[[], object]
) -> list[BaseException]:
    """``hold`` runs in a transaction kept open, after its audit append, until ``wait`` (in
    another thread, another connection) is blocked on a lock; then it commits."""
    errors: list[BaseException] = []
    holding = threading.Event()

    def holder() -> None:
        try:
            with transaction.atomic():
                hold()
                holding.set()
                deadline = time.monotonic() + 30
                while _lock_waiters() == 0 and time.monotonic() < deadline:
                    time.sleep(0.02)
        except BaseException as exc:  # reported to the test
            errors.append(exc)
        finally:
            holding.set()
            connection.close()

    def waiter() -> None:
        holding.wait(30)
        try:
            wait()
        except BaseException as exc:  # reported to the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=holder), threading.Thread(target=waiter)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return errors


def test_a_preview_run_committing_while_a_reviewer_approves_does_not_deadlock(crowd: Flow):
    memory = crowd.rule({"project": "P-9"})
    version = head(memory["id"])
    item = MemoryItem.objects.get(pk=memory["id"])
    policy = resolver_policy(current_policy(crowd.world.tenant))
    now = timezone.now()
    outcomes = checks.run_all(version, policy, now)

    errors = holder_and_waiter(
        lambda: checking.record_results(
            version, CheckResult.Run.PREVIEW, policy.version, now, outcomes
        ),
        lambda: version_approve(principal=crowd.world.principal("rita"), item=item, comment=""),
    )

    assert errors == []
    assert Approval.objects.filter(version=version).count() == 1
    assert CheckResult.objects.filter(version=version, run="preview").count() == len(outcomes)


def test_publishing_a_policy_while_another_change_commits_does_not_deadlock(crowd: Flow):
    tenant = crowd.world.tenant
    rita = crowd.world.principal("rita")

    errors = holder_and_waiter(
        lambda: audit_append(
            tenant=tenant,
            actor="user:rita",
            action="test.change",
            target_type="test",
            target_id="1",
        ),
        lambda: policy_publish(principal=rita, precedence={}, reason="same order, new version"),
    )

    assert errors == []
    assert AuditEvent.objects.filter(tenant=tenant, action="policy.published").count() == 1


def test_revoking_a_source_while_a_proposal_citing_it_commits_does_not_deadlock(crowd: Flow):
    approval = crowd.source("approval_record")
    version = head(crowd.rule({"project": "P-10"})["id"])
    source = Source.objects.get(pk=approval)

    def cite_it() -> None:  # the body of a proposal's transaction, citing the source
        version.sources.add(source)
        audit_append(
            tenant=crowd.world.tenant,
            actor="agent:bot",
            action="memory.proposed",
            target_type="memory",
            target_id=version.item_id,
        )

    errors = holder_and_waiter(
        cite_it,
        lambda: source_revoke(principal=crowd.world.principal("rita"), source=source, reason="x"),
    )

    assert errors == []
    assert Source.objects.get(pk=approval).revoked_at is not None
