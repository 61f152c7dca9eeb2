"""A slow receiver never delays the workflow (issue 33, point 9): deliveries have their
own queue and their own worker, so with every delivery trickling, an approval activates
as quickly as without webhooks. The workers are deploy/Procfile's, started as written
(with a one-slot pool, the worst case) on PostgreSQL and the Redis broker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from memory import events
from memory.models import Status
from tests.approvals.support import Flow, head
from tests.conftest import needs
from tests.deploy.support import ROOT, is_celery_worker, procfile
from tests.integration.test_workflow_worker import broker, wait_for, worker_environment
from tests.webhooks.receiver import Trickle, trickling_receiver
from tests.webhooks.support import create_webhook
from tests.webhooks.test_delivery_worker import flow

pytestmark = [
    needs("redis"),
    needs("postgres"),
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
]
__all__ = ["broker", "flow"]  # fixtures, imported for their names
P9 = {"project": "P-9"}
PROMPTLY = 5.0  # seconds from the last approval to activation; it takes about one


@pytest.fixture
def trickle() -> Iterator[Trickle]:
    with trickling_receiver(interval=1.0, length=600) as trickle:
        yield trickle


def _ready(log: Path) -> bool:
    return " ready." in log.read_text()


@pytest.fixture
def procfile_workers(tmp_path: Path) -> Iterator[list[Path]]:
    """Every Celery worker of deploy/Procfile, each in its own process; their logs."""
    started: list[tuple[subprocess.Popen[bytes], Path]] = []
    env = {**worker_environment(), "MEMGOV_WEBHOOK_ALLOW_PRIVATE": "1"}  # the receiver
    try:
        for name, argv in procfile().items():
            if not is_celery_worker(argv):
                continue
            log = tmp_path / f"{name}.log"
            command = [
                *(sys.executable, "-m", "celery", *argv[1:]),
                *("--pool=solo", "--without-mingle", "--without-gossip"),
                *("-n", f"{name}-{uuid.uuid4().hex[:8]}@%h"),
            ]
            with log.open("wb") as out:
                process = subprocess.Popen(  # noqa: S603 - the Procfile's own command
                    command,
                    cwd=ROOT,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            started.append((process, log))
        for _, log in started:
            wait_for(f"{log.stem} to be ready", partial(_ready, log))
        yield [log for _, log in started]
    finally:
        for process, _ in started:
            os.killpg(process.pid, signal.SIGTERM)  # warm: finishes its task, acks it
        for process, _ in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def test_receivers_trickling_every_answer_do_not_delay_an_activation(
    flow: Flow, trickle: Trickle, procfile_workers: list[Path]
):
    # Given three endpoints on a receiver that trickles its answers (a byte a second,
    # for ten minutes), subscribed to everything.
    for _ in range(3):
        create_webhook(flow, trickle.url, *events.EVENT_TYPES)

    # When a rule is proposed (three deliveries, each held to its deadline) and, while
    # the receiver trickles, approved.
    memory_id = flow.rule(P9)["id"]
    wait_for("a delivery to be trickling", lambda: len(trickle.connections) >= 1)
    started = time.monotonic()
    flow.approve(memory_id, "rita", "lena")
    wait_for("the gate run", lambda: head(memory_id).status != Status.CHECKING, timeout=120)
    took = time.monotonic() - started

    # Then the rule is active about as quickly as without any webhook.
    assert head(memory_id).status == Status.ACTIVE
    assert took < PROMPTLY, f"activation took {took:.1f} s behind the deliveries"
    assert trickle.finished == []  # the receiver never got to finish an answer
