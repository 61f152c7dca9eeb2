"""Deliveries end to end with real components: PostgreSQL, the Redis broker, a Celery
worker, and a receiver started by the test that verifies every signature with the client
package (docs/design.md, Webhooks and agent interfaces; issue 13)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from itertools import pairwise
from typing import Any

import pytest
from django.db import DatabaseError, connection
from kombu.exceptions import OperationalError

from agent_interface.serializers import ProposalInput
from config.celery import app as celery_app
from core import outbox
from core.kinds import OutboxKind
from core.models import Outbox
from memory import proposals
from tests.approvals.support import Flow, head
from tests.conftest import World, needs
from tests.integration.test_workflow_worker import broker, embedded_worker, wait_for
from tests.webhooks.conftest import RETRY_BASE
from tests.webhooks.receiver import Receiver, live_receiver
from tests.webhooks.support import MANAGER, create_webhook, webhook_manager
from webhooks.models import WebhookDelivery

pytestmark = [
    needs("redis"),
    needs("postgres"),
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
]
__all__ = ["broker"]  # the fixture, imported for its name
P9 = {"project": "P-9"}
QUIET = 2.0  # seconds in which nothing more may arrive


@pytest.fixture
def flow(world: World, broker: None) -> Flow:
    flow = Flow(world=world)
    webhook_manager(flow)
    return flow


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with live_receiver() as receiver:
        yield receiver


def subscribe(flow: Flow, receiver: Receiver, *events: str) -> dict[str, Any]:
    created = create_webhook(flow, receiver.url, *events)
    receiver.secrets.append(created["secret"])
    return dict(created)


def all_verified(receiver: Receiver) -> bool:
    return all(r.verified_with for r in receiver.all())


def test_retiring_a_used_rule_sends_one_retired_event_and_one_per_flagged_task(
    flow: Flow, receiver: Receiver
):
    webhook = subscribe(flow, receiver, "memory.retired", "task.needs_reverification")
    with embedded_worker():
        # Given an active rule that two renewal tasks were told about.
        memory_id = flow.rule(P9)["id"]
        flow.approve(memory_id, "rita", "lena")
        wait_for("the gate run", lambda: head(memory_id).status == "active")
        for task in ("renewal-1", "renewal-2"):
            assert flow.resolved_ids(P9, task_id=task) == [memory_id]

        # When it is retired.
        retired = flow.ok(flow.retire(memory_id))
        assert retired["flagged_tasks"] == ["renewal-1", "renewal-2"]

        # Then the receiver hears exactly one retirement and one event per flagged task.
        wait_for("three deliveries", lambda: len(receiver.all()) == 3)
        time.sleep(QUIET)
    assert len(receiver.all()) == 3 and all_verified(receiver)
    [event] = receiver.events("memory.retired")
    assert event["data"] == {
        "memory_id": memory_id,
        "versions": [1],
        "kind": "enterprise_rule",
        "subject": flow.subject(),
        "field": "material_checks",
        "status": "retired",
        "reason": "APR-2291 was withdrawn",
        "flagged_tasks": ["renewal-1", "renewal-2"],
    }
    tasks = receiver.events("task.needs_reverification")
    assert sorted(e["data"]["task_id"] for e in tasks) == ["renewal-1", "renewal-2"]
    assert {(e["data"]["memory_id"], e["data"]["event"]) for e in tasks} == {(memory_id, "retired")}
    # Ids, statuses and reasons; never the value or the statement.
    assert all("follow exception" not in r.body.decode() for r in receiver.all())
    ids = [r.headers["webhook-id"] for r in receiver.all()]
    assert len(set(ids)) == 3 and all(i.startswith("msg_") for i in ids)
    log = flow.ok(flow.get(MANAGER, f"/webhooks/{webhook['id']}/deliveries"))["results"]
    assert [(d["status"], d["attempts"]) for d in log] == [("delivered", 1)] * 3
    assert all(d["log"][0]["status_code"] == 200 for d in log)


def test_a_receiver_failing_three_times_gets_the_event_once_with_growing_waits(
    flow: Flow, receiver: Receiver
):
    webhook = subscribe(flow, receiver, "memory.pending_review")
    receiver.answers = [500, 500, 500]
    with embedded_worker():
        memory_id = flow.rule(P9)["id"]
        wait_for("four attempts", lambda: len(receiver.all()) == 4, timeout=60)
        time.sleep(QUIET)
    attempts = receiver.all()
    assert [a.answered for a in attempts] == [500, 500, 500, 200]
    assert all_verified(receiver)
    assert len({a.headers["webhook-id"] for a in attempts}) == 1
    assert len({a.body for a in attempts}) == 1
    waits = [later.at - earlier.at for earlier, later in pairwise(attempts)]
    assert waits[0] >= RETRY_BASE * 0.9
    assert waits[0] < waits[1] < waits[2]
    [event] = receiver.events()
    assert (event["type"], event["data"]["memory_id"]) == ("memory.pending_review", memory_id)
    assert event["data"]["status"] == "pending_review"
    [delivery] = flow.ok(flow.get(MANAGER, f"/webhooks/{webhook['id']}/deliveries"))["results"]
    assert (delivery["status"], delivery["attempts"]) == ("delivered", 4)
    assert [a["status_code"] for a in delivery["log"]] == [500, 500, 500, 200]
    assert [a["error"] for a in delivery["log"]] == ["HTTP 500"] * 3 + [""]
    assert all(a["latency_ms"] >= 0 for a in delivery["log"])


@contextmanager
def failing_commit_after_an_event() -> Iterator[None]:
    """Within the block, a transaction that wrote a webhook event fails at its commit."""
    table = Outbox._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION test_refuse_event() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN RAISE EXCEPTION 'could not write to file: No space left on device'; END $$"
        )
        cursor.execute(
            f"CREATE CONSTRAINT TRIGGER test_refuse_event AFTER INSERT ON {table} "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
            f"WHEN (NEW.kind = '{OutboxKind.WEBHOOK_EVENT}') EXECUTE FUNCTION test_refuse_event()"
        )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER test_refuse_event ON {table}")
            cursor.execute("DROP FUNCTION test_refuse_event()")


def test_a_rolled_back_proposal_sends_nothing(flow: Flow, receiver: Receiver):
    subscribe(flow, receiver, "memory.pending_review")
    proposal = ProposalInput(data=flow.body("enterprise_rule", P9))
    proposal.is_valid(raise_exception=True)
    with embedded_worker():
        # The commit itself fails after the event was written (PostgreSQL checks a
        # deferred constraint there; a full disk or a lost connection fail it the same way).
        with failing_commit_after_an_event(), pytest.raises(DatabaseError):
            proposals.memory_propose(
                principal=flow.world.principal("agent"), data=proposal.validated_data
            )
        # A proposal that commits is delivered: the silence above is not a slow worker.
        memory_id = flow.rule(P9)["id"]
        wait_for("the committed proposal's event", lambda: len(receiver.all()) >= 1)
        time.sleep(QUIET)
    assert [e["data"]["memory_id"] for e in receiver.events()] == [memory_id]
    assert len(receiver.all()) == 1 and all_verified(receiver)


def test_an_event_of_a_commit_while_the_broker_was_down_is_delivered_after_it_returns(
    flow: Flow, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
):
    subscribe(flow, receiver, "memory.pending_review")
    fan_out = celery_app.tasks["webhooks.tasks.fan_out_event"]

    def broker_down(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("Error 111 connecting to redis:6379. Connection refused.")

    with embedded_worker():
        # Given the broker refuses the hand-over when the proposal commits.
        monkeypatch.setattr(fan_out, "apply_async", broker_down)
        memory_id = flow.rule(P9)["id"]
        monkeypatch.undo()
        [row] = Outbox.objects.filter(kind=OutboxKind.WEBHOOK_EVENT)
        assert row.dispatched_at is None and "Connection refused" in row.last_error
        time.sleep(QUIET)
        assert receiver.all() == []

        # When the broker is back and the beat sweeper runs.
        assert outbox.outbox_sweep(older_than=timedelta(0)) == [row.pk]

        # Then the event is delivered, once.
        wait_for("the swept event", lambda: len(receiver.all()) == 1)
        time.sleep(QUIET)
    [event] = receiver.events()
    assert event["data"]["memory_id"] == memory_id and all_verified(receiver)
    assert WebhookDelivery.objects.get().status == "delivered"
    assert outbox.outbox_sweep(older_than=timedelta(0)) == []
