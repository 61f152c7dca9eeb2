"""Issue 42, point 7: tenants take turns at the webhook workers. A tenant with its share of
attempts running (``MEMGOV_WEBHOOK_TENANT_MAX_IN_FLIGHT``) has its next delivery deferred,
not attempted; another tenant's is attempted at once; an attempt that ends hands its slot
to its own tenant's oldest due delivery; the sweeper asks tenant by tenant. Tasks run
in-process (eager) and post to a live receiver. The worker story, with a slow receiver,
is ``test_fair_delivery_worker.py``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from core.ids import new_event_id
from tests.approvals.support import Flow
from tests.conftest import World
from tests.webhooks.receiver import Receiver, live_receiver
from tests.webhooks.support import create_webhook, grant_zed_webhooks, webhook_manager
from webhooks import delivery
from webhooks.models import WebhookDelivery

EVENT = "revalidation.finished"


@pytest.fixture
def flow(world: World, django_capture_on_commit_callbacks: Any) -> Flow:
    flow = Flow(world=world, on_commit=django_capture_on_commit_callbacks)
    webhook_manager(flow)
    grant_zed_webhooks(flow)
    return flow


@pytest.fixture
def receiver(flow: Flow) -> Iterator[Receiver]:
    with live_receiver() as receiver:
        yield receiver


@pytest.fixture
def endpoints(flow: Flow, receiver: Receiver) -> dict[str, str]:
    """One endpoint of Acme's and one of Globex's, both on the receiver."""
    acme = create_webhook(flow, receiver.url, EVENT)
    globex = create_webhook(flow, receiver.url, EVENT, who="zed")
    receiver.secrets += [acme["secret"], globex["secret"]]
    return {"acme": acme["id"], "globex": globex["id"]}


def _delivery(
    endpoints: dict[str, str], world: World, who: str, *, due: datetime, running: bool = False
) -> str:
    """A due delivery of ``who``'s tenant; ``running``: an attempt holds its claim."""
    tenant = world.tenant if who == "acme" else world.other_tenant
    event_id = new_event_id()
    row = WebhookDelivery.objects.create(
        tenant=tenant,
        endpoint_id=endpoints[who],
        event_id=event_id,
        event_type=EVENT,
        body=delivery.body_of(EVENT, due.isoformat(), {"job": event_id}),
        created_at=due,
        next_attempt_at=due,
        claimed_until=timezone.now() + timedelta(minutes=1) if running else None,
    )
    return str(row.pk)


def _received(receiver: Receiver) -> list[str]:
    """The deliveries the receiver got, by their ``webhook-id`` (the event id)."""
    return [r.headers["webhook-id"] for r in receiver.all()]


def _event(delivery_id: str) -> str:
    return WebhookDelivery.objects.get(pk=delivery_id).event_id


def test_a_tenant_with_its_share_running_waits_and_another_tenant_is_attempted_at_once(
    flow: Flow, receiver: Receiver, endpoints: dict[str, str]
):
    # Given Acme's one attempt running (its share) and a second delivery of Acme's due.
    now = timezone.now()
    _delivery(endpoints, flow.world, "acme", due=now - timedelta(minutes=2), running=True)
    waiting = _delivery(endpoints, flow.world, "acme", due=now - timedelta(minutes=1))
    other = _delivery(endpoints, flow.world, "globex", due=now)

    # When a worker is asked for Acme's second delivery, then for Globex's.
    asked = [delivery.delivery_attempt(waiting), delivery.delivery_attempt(other)]

    # Then Acme's waits its turn, unclaimed and unattempted, and Globex's is delivered.
    assert asked == ["deferred", "delivered"]
    assert _received(receiver) == [_event(other)]
    row = WebhookDelivery.objects.get(pk=waiting)
    assert (row.status, row.attempts, row.claimed_until) == ("pending", 0, None)


def test_an_attempt_that_ends_hands_its_slot_to_its_tenants_oldest_due_delivery(
    flow: Flow, receiver: Receiver, endpoints: dict[str, str]
):
    # Given three due deliveries of Acme's, the oldest first.
    now = timezone.now()
    oldest, middle, newest = (
        _delivery(endpoints, flow.world, "acme", due=now - timedelta(minutes=m)) for m in (3, 2, 1)
    )

    # When a worker is asked for the newest only.
    assert delivery.delivery_attempt(newest) == "delivered"

    # Then each attempt that ended asked for the oldest one still due: all three went,
    # one at a time.
    assert _received(receiver) == [_event(newest), _event(oldest), _event(middle)]
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}


def test_the_sweeper_asks_for_each_tenants_oldest_due_deliveries_within_its_share(
    flow: Flow, endpoints: dict[str, str], settings: Any, monkeypatch: pytest.MonkeyPatch
):
    settings.MEMGOV_WEBHOOK_TENANT_MAX_IN_FLIGHT = 2
    asked: list[list[str]] = []
    monkeypatch.setattr(delivery, "request_attempts", asked.append)
    now = timezone.now()
    # Given Acme with one attempt running and three due, Globex with three due.
    _delivery(endpoints, flow.world, "acme", due=now - timedelta(minutes=9), running=True)
    acme = [
        _delivery(endpoints, flow.world, "acme", due=now - timedelta(minutes=m)) for m in (8, 6, 4)
    ]
    globex = [
        _delivery(endpoints, flow.world, "globex", due=now - timedelta(minutes=m))
        for m in (7, 5, 3)
    ]

    # When the sweeper runs.
    swept = delivery.deliveries_due()

    # Then it asks for Acme's oldest (one slot free) and Globex's two oldest, in time order.
    assert swept == [acme[0], globex[0], globex[1]]
    assert asked == [swept]


def test_a_fan_out_asks_for_no_more_attempts_than_its_tenant_has_free_slots(
    flow: Flow, receiver: Receiver, endpoints: dict[str, str], monkeypatch: pytest.MonkeyPatch
):
    asked: list[list[str]] = []
    monkeypatch.setattr(delivery, "request_attempts", asked.append)
    more = [create_webhook(flow, receiver.url, EVENT)["id"] for _ in range(3)]

    with flow.on_commit(execute=True):  # type: ignore[misc]
        created = delivery.event_fan_out(
            event_id=new_event_id(),
            tenant_id=flow.world.tenant.pk,
            event_type=EVENT,
            timestamp=timezone.now().isoformat(),
            data={"job": "j1"},
        )

    assert len(created) == 1 + len(more)
    [[first]] = asked  # one slot: the rest follow as attempts end
    assert first in created
