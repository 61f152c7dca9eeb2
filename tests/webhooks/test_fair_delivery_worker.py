"""Issue 42, point 7: one tenant's slow receivers delayed another tenant's delivery by
2 min 39 s, queued behind every one of the slow tenant's attempts. Now a tenant holds at
most its share of the webhook workers' slots (``MEMGOV_WEBHOOK_TENANT_MAX_IN_FLIGHT``,
one), so another tenant's delivery goes out within one attempt deadline.

Real components: PostgreSQL, the Redis broker, the webhook worker of deploy/Procfile as
written (prefork, two processes, as deployed), a receiver for Acme that trickles its
answers past the deadline and a quick one for Globex. Events leave through the outbox,
as every event does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from functools import partial
from itertools import pairwise
from pathlib import Path

import pytest
from django.db import transaction

from memory import events
from tests.approvals.support import Flow
from tests.conftest import World, needs
from tests.deploy.support import ROOT, procfile
from tests.integration.test_workflow_worker import broker, wait_for, worker_environment
from tests.webhooks.receiver import Receiver, Trickle, live_receiver, trickling_receiver
from tests.webhooks.support import create_webhook, grant_zed_webhooks, webhook_manager
from webhooks.models import WebhookDelivery

pytestmark = [
    needs("redis"),
    needs("postgres"),
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
]
__all__ = ["broker"]  # the fixture, imported for its name
EVENT = "revalidation.finished"
DEADLINE = 4.0  # MEMGOV_WEBHOOK_DEADLINE_SECONDS of the worker
MARGIN = 4.0  # a busy machine's worth: queueing, fan-out, a worker process waking up
SLOW_ENDPOINTS = 16  # Acme's deliveries per event: 8 deadlines' worth for both slots


@pytest.fixture
def flow(world: World, broker: None) -> Flow:
    flow = Flow(world=world)
    webhook_manager(flow)
    grant_zed_webhooks(flow)
    return flow


@pytest.fixture
def slow() -> Iterator[Trickle]:
    """Acme's receivers: a byte a second for ten minutes, far past the deadline."""
    with trickling_receiver(interval=1.0, length=600) as trickle:
        yield trickle


@pytest.fixture
def quick() -> Iterator[Receiver]:
    with live_receiver() as receiver:
        yield receiver


def _ready(log: Path) -> bool:
    return " ready." in log.read_text()


@pytest.fixture
def webhook_worker(tmp_path: Path) -> Iterator[Path]:
    """deploy/Procfile's webhook worker, as written (its pool and concurrency); its log."""
    argv = procfile()["webhooks"]
    env = {
        **worker_environment(),
        "MEMGOV_WEBHOOK_ALLOW_PRIVATE": "1",  # the receivers listen on loopback
        "MEMGOV_WEBHOOK_DEADLINE_SECONDS": str(DEADLINE),
    }
    log = tmp_path / "webhooks.log"
    command = [
        *(sys.executable, "-m", "celery", *argv[1:]),
        *("--without-mingle", "--without-gossip"),
        *("-n", f"fair-{uuid.uuid4().hex[:8]}@%h"),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603 - the Procfile's own command
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        wait_for("the webhook worker to be ready", partial(_ready, log))
        yield log
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _emit(flow: Flow, tenant_of: str) -> None:
    tenant = flow.world.other_tenant if tenant_of == "globex" else flow.world.tenant
    with transaction.atomic():  # committed: the outbox hands the event to the broker
        events.event_emit(tenant=tenant, event_type=EVENT, data={"job": uuid.uuid4().hex})


def test_a_tenants_slow_receivers_do_not_delay_another_tenants_delivery_past_one_deadline(
    flow: Flow, slow: Trickle, quick: Receiver, webhook_worker: Path
):
    # Given Acme's sixteen endpoints on receivers that never answer within the deadline,
    # and Globex's one endpoint on a quick receiver.
    assert flow.world.other_tenant.pk != flow.world.tenant.pk
    quick.secrets.append(create_webhook(flow, quick.url, EVENT, who="zed")["secret"])
    for _ in range(SLOW_ENDPOINTS):
        create_webhook(flow, slow.url, EVENT)

    # When Acme's event is out to all sixteen, and its first attempt is hanging,
    _emit(flow, "acme")
    wait_for("Acme's first attempt", lambda: len(slow.connections) >= 1)
    time.sleep(0.5)  # the worker's other slot has had time to take up Acme's queue
    # and then Globex's event happens.
    started = time.monotonic()
    _emit(flow, "globex")
    wait_for("Globex's delivery", lambda: len(quick.all()) >= 1, timeout=60)
    took = quick.all()[0].at - started

    # Then Globex's delivery went out within one attempt deadline, while Acme's wait.
    assert took < DEADLINE + MARGIN, f"Globex waited {took:.1f} s behind Acme's receivers"
    assert all(r.verified_with for r in quick.all())
    acme_pending = WebhookDelivery.objects.filter(tenant=flow.world.tenant, status="pending")
    assert acme_pending.count() == SLOW_ENDPOINTS  # none gave up, none was delivered
    # And Acme never had more than its one slot: each of its attempts began after the
    # previous one had been cut off at the deadline.
    wait_for("Acme's third attempt", lambda: len(slow.connections) >= 3, timeout=60)
    gaps = [later - earlier for earlier, later in pairwise(slow.connections)]
    assert min(gaps) > DEADLINE - 0.5, gaps
