"""The workflow with real components (docs/conventions.md, 13): PostgreSQL, the Redis broker
of the settings, and Celery workers — one embedded in this process, and one started as
``celery -A config worker`` and killed with SIGKILL in the middle of a gate run.

Tasks are acknowledged late and idempotent; a version whose gate run was lost stays in
``checking`` until the sweeper re-enqueues it (docs/design.md, Scenario checks)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.conf import settings
from django.core import mail
from django.db import connection

from approvals import tasks
from approvals.models import CheckResult
from audit.models import AuditEvent
from config.celery import app as celery_app
from core.models import Outbox
from memory.models import Status
from tests.approvals.support import Flow, head
from tests.approvals.test_correction_goes_live import ORDER_A, address_fact, correct_with_new_record
from tests.conftest import World, child_processes, needs
from tests.integration.slow_worker import PAUSED

pytestmark = [
    needs("redis"),
    needs("postgres"),
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
]

ROOT = Path(__file__).resolve().parents[2]
P9 = {"project": "P-9"}
PATIENCE = 90.0  # seconds a worker may take to get to a task on a slow CI machine


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _close_db_connection(**_: Any) -> None:
    connection.close()  # the embedded worker's thread holds its own connection


def _forget_our_messages() -> None:
    """Empty the queue, and drop the unacknowledged approvals messages a killed worker
    left behind (Redis would hand them out again after the visibility timeout, to
    whatever database the next worker serves)."""
    celery_app.control.purge()
    with celery_app.connection_for_write() as conn:
        client: Any = conn.default_channel.client  # type: ignore[attr-defined]  # kombu Redis
        for tag, raw in client.hgetall("unacked").items():
            if b"approvals.tasks." in raw:
                client.hdel("unacked", tag)
                client.zrem("unacked_index", tag)


@pytest.fixture
def broker() -> Iterator[None]:
    """Tasks go to the Redis broker of the settings instead of running in-process."""
    celery_app.conf.task_always_eager = False  # the autouse fixture restores it
    _forget_our_messages()
    task_postrun.connect(_close_db_connection, weak=False)
    yield
    task_postrun.disconnect(_close_db_connection)
    _forget_our_messages()


@pytest.fixture
def flow(world: World, broker: None) -> Flow:
    return Flow(world=world)  # transaction=True: commits are real, on_commit runs


def wait_for(what: str, condition: Callable[[], bool], timeout: float = PATIENCE) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


def embedded_worker() -> Any:
    return start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=30.0)


def test_with_a_real_worker_an_approved_rule_is_checked_used_and_retired(flow: Flow):
    with embedded_worker():
        memory = flow.rule(P9)
        wait_for("the reviewers to be told", lambda: len(mail.outbox) == 3)
        assert sorted(m.to[0] for m in mail.outbox) == [
            "lena@example.com",
            "omar@example.com",
            "rita@example.com",
        ]
        flow.approve(memory["id"], "rita", "lena")
        wait_for("the gate run", lambda: head(memory["id"]).status != Status.CHECKING)

        assert flow.memory(memory["id"])["status"] == "active"
        assert flow.resolved_ids(P9) == [memory["id"]]

        flow.ok(flow.retire(memory["id"]))

        assert flow.resolved_ids(P9) == []
        wait_for(
            "the retirement email",
            lambda: any(m.subject.startswith("[Memgov] Retired") for m in mail.outbox),
        )
    gate = CheckResult.objects.filter(version=head(memory["id"]), run="gate")
    assert gate.count() == 5


def test_with_a_real_worker_a_correction_citing_a_new_record_goes_live(flow: Flow):
    """Issue 9, point 2: the everyday path, with the gate run by a worker over Redis."""
    with embedded_worker():
        memory = address_fact(flow)
        flow.approve(memory["id"], "rita")
        wait_for("v1's gate run", lambda: head(memory["id"]).status != Status.CHECKING)
        assert flow.memory(memory["id"])["status"] == "active"

        for number, address in ((2, "4 Dock Road"), (3, "9 Quay Street")):
            correct_with_new_record(flow, memory["id"], number, address)
            flow.approve(memory["id"], "rita")
            wait_for(
                f"v{number}'s gate run",
                lambda: head(memory["id"]).status not in (Status.CHECKING, Status.PENDING_REVIEW),
            )
            now = flow.memory(memory["id"])
            assert (now["version"], now["active_version"], now["status"]) == (
                number,
                number,
                "active",
            )
            [fact] = flow.resolve(ORDER_A)["facts"]
            assert (fact["version"], fact["value"]) == (number, address)

        flow.ok(flow.retire(memory["id"]))
        assert flow.resolve(ORDER_A, fields=["delivery_address"])["facts"] == []
    versions = flow.ok(flow.get("rita", f"/memories/{memory['id']}/versions"))
    assert [v["status"] for v in versions] == ["superseded", "superseded", "retired"]


def _test_database_url() -> str:
    """pytest-django's database (``test_<name>``), for a worker in another process."""
    db = connection.settings_dict
    credentials = quote(db["USER"] or "") + (f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else "")
    return f"postgres://{credentials}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def worker_environment() -> dict[str, str]:
    """What a worker in another process needs to serve this test's database and broker."""
    return {
        **os.environ,
        "DATABASE_URL": _test_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "CACHE_URL": settings.CACHE_URL,
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "EMAIL_URL": "dummy://",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }


def celery_worker_process(
    log: Path, check_delay: float, pool: str = "solo"
) -> subprocess.Popen[bytes]:
    env = worker_environment()
    command = [
        *(sys.executable, "-m", "tests.integration.slow_worker", str(check_delay), "worker"),
        *(f"--pool={pool}", "--concurrency=1", "--loglevel=INFO"),
        *("--without-mingle", "--without-gossip"),
        *("-n", f"doomed-{uuid.uuid4().hex[:8]}@%h"),
    ]
    with log.open("wb") as out:
        return subprocess.Popen(  # noqa: S603 - our own worker, fixed arguments
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def test_a_worker_killed_in_the_middle_of_a_gate_run_is_finished_by_the_sweeper(
    flow: Flow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # Given a rule approved twice: its gate run waits in the broker.
    memory = flow.rule(P9)
    flow.approve(memory["id"], "rita", "lena")
    version = head(memory["id"])
    assert version.status == Status.CHECKING
    log = tmp_path / "worker.log"

    # When a real worker takes the gate run and is killed while its results are written
    # but not committed.
    worker = celery_worker_process(log, check_delay=600)
    try:
        wait_for("the worker to pause its gate run", lambda: PAUSED in log.read_text())
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()

    # Then nothing of that run is left, and the version is still checking.
    assert worker.returncode == -signal.SIGKILL
    assert head(memory["id"]).status == Status.CHECKING
    assert CheckResult.objects.filter(version=version, run="gate").count() == 0

    # When the sweeper finds it stuck and a healthy worker runs it again.
    monkeypatch.setattr(tasks, "STUCK_AFTER", timedelta(0))
    assert tasks.sweep_stuck_checks() == [version.pk]
    with embedded_worker():
        wait_for("the gate run", lambda: head(memory["id"]).status != Status.CHECKING)

    # Then it was activated exactly once, with one result per scenario.
    assert head(memory["id"]).status == Status.ACTIVE
    activations = AuditEvent.objects.filter(target_id=memory["id"], action="memory.active")
    assert activations.count() == 1
    gate = CheckResult.objects.filter(version=version, run="gate")
    assert gate.count() == 5
    assert len({(r.scenario_key, r.policy_version) for r in gate}) == 5
    assert flow.resolved_ids(P9) == [memory["id"]]


def test_a_pool_process_killed_in_the_middle_of_a_gate_run_gets_it_redelivered(
    flow: Flow, tmp_path: Path
):
    # Given a rule approved twice, and a prefork worker that pauses its gate runs.
    memory = flow.rule(P9)
    flow.approve(memory["id"], "rita", "lena")
    version = head(memory["id"])
    log = tmp_path / "worker.log"
    worker = celery_worker_process(log, check_delay=5, pool="prefork")
    try:
        # When the pool process running the gate is killed (the worker itself lives on).
        wait_for("the gate run to pause", lambda: PAUSED in log.read_text())
        [pool_process] = child_processes(worker.pid)
        os.kill(pool_process, signal.SIGKILL)

        # Then the message comes back (acks_late, reject_on_worker_lost) and is run again.
        wait_for("the redelivered gate run", lambda: head(memory["id"]).status != Status.CHECKING)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()

    output = log.read_text()
    assert "WorkerLostError" in output
    assert output.count(PAUSED) == 2
    assert head(memory["id"]).status == Status.ACTIVE
    activations = AuditEvent.objects.filter(target_id=memory["id"], action="memory.active")
    assert activations.count() == 1
    assert CheckResult.objects.filter(version=version, run="gate").count() == 5


NO_VERIFICATION = {"order": ["specificity", "kind", "valid_from"]}


def _is_active(memory_id: str) -> bool:
    return head(memory_id).status == Status.ACTIVE


def test_with_a_real_worker_a_published_policy_suspends_what_now_fails(flow: Flow):
    with embedded_worker():
        # Given the verified P-9 rule wins over the confirmed one under policy 1.
        record = flow.source("business_record", content="PO-7731 v3: exception granted.")
        verified = flow.rule(P9, sources=[record])["id"]
        confirmed = flow.rule(P9, value="check every delivery")["id"]
        for memory_id in (confirmed, verified):
            flow.approve(memory_id, "rita", "lena")
            wait_for("the gate run", partial(_is_active, memory_id))
        assert flow.resolved_ids(P9) == [verified]
        mail.outbox.clear()

        # When a policy without the verification rank is published (the two now tie).
        body = {"precedence": NO_VERIFICATION, "reason": "verification is not a rank any more"}
        job = flow.ok(flow.post("rita", "/policy", body), 201)["revalidation"]
        path = f"/revalidations/{job}"
        wait_for("the revalidation", lambda: flow.ok(flow.get("rita", path))["status"] == "done")

        # Then the first one checked is suspended, agents get the other, people are told.
        assert flow.ok(flow.get("rita", path))["flagged"] == [verified]
        suspended = flow.memory(verified)
        assert (suspended["status"], suspended["status_reason"]) == (
            "checks_failed",
            "revalidation",
        )
        assert suspended["checks"]["status"] == "failed"
        assert flow.resolved_ids(P9) == [confirmed]
        wait_for("the suspension emails", lambda: len(mail.outbox) == 3)
        assert {m.subject for m in mail.outbox} == {
            "[Memgov] Re-validation suspended: “Renewals follow exception APR-2291.”"
        }
        assert Outbox.objects.get(kind="revalidation.run").dispatched_at is not None
