"""A disabled endpoint comes back (issue 47, point 3): its manager re-enables it through
the API, the dashboard or the admin (one audited service), and the events recorded while
it was disabled — and the one it was given up on — are delivered then, oldest first, with
their own ``webhook-id``, within the held retention (7 days); older ones are dropped and
counted. The owner's email says how, and the disabled-endpoint alert's gauge clears."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from audit.models import AuditEvent
from tests.approvals.support import Flow
from tests.conftest import World
from tests.webhooks.receiver import Receiver, live_receiver
from tests.webhooks.support import MANAGER, create_webhook, grant_zed_webhooks, webhook_manager
from webhooks import delivery
from webhooks.models import WebhookDelivery, WebhookEndpoint
from webhooks.services import webhook_disable

P9 = {"project": "P-9"}
TOKEN = "scrape-token-for-tests"


@pytest.fixture
def flow(world: World, django_capture_on_commit_callbacks: Any) -> Flow:
    flow = Flow(world=world, on_commit=django_capture_on_commit_callbacks)
    webhook_manager(flow)
    return flow


@pytest.fixture
def receiver(flow: Flow) -> Iterator[Receiver]:
    with live_receiver() as receiver:
        yield receiver


def subscribed(flow: Flow, receiver: Receiver) -> str:
    created = create_webhook(flow, receiver.url, "memory.pending_review")
    receiver.secrets.append(created["secret"])
    return str(created["id"])


def disabled(flow: Flow, webhook_id: str, given_up: str = "") -> None:
    """What the delivery worker does after a day of failures (webhooks/delivery.py)."""
    assert flow.on_commit is not None
    with flow.on_commit(execute=True):
        webhook_disable(endpoint_id=webhook_id, reason="HTTP 503", failed_delivery_id=given_up)


def held_event_ids(webhook_id: str) -> list[str]:
    held = WebhookDelivery.objects.filter(endpoint_id=webhook_id, status="held")
    return list(held.order_by("created_at", "pk").values_list("event_id", flat=True))


def test_a_re_enabled_endpoint_gets_the_events_held_while_disabled_in_order_with_their_ids(
    flow: Flow, receiver: Receiver
):
    webhook_id = subscribed(flow, receiver)
    disabled(flow, webhook_id)
    for _ in range(3):
        flow.rule(P9)
    held = held_event_ids(webhook_id)
    assert len(held) == 3 and receiver.all() == []  # held, not sent, not lost

    answer = flow.ok(flow.post(MANAGER, f"/webhooks/{webhook_id}/enable"))

    assert (answer["status"], answer["held_released"], answer["held_dropped"]) == ("active", 3, 0)
    assert answer["disabled_at"] is None and answer["disabled_reason"] == ""
    assert [r.headers["webhook-id"] for r in receiver.all()] == held
    assert all(r.verified_with for r in receiver.all())
    statuses = WebhookDelivery.objects.values_list("status", flat=True)
    assert set(statuses) == {"delivered"}
    [event] = AuditEvent.objects.filter(action="webhook.enabled", target_id=webhook_id)
    assert (event.actor, event.data) == (f"user:{MANAGER}", {"released": 3, "dropped": 0})
    # Active again: the next event goes out at once.
    flow.rule(P9)
    assert len(receiver.all()) == 4


def test_events_held_longer_than_the_retention_are_dropped_and_counted(
    flow: Flow, receiver: Receiver
):
    webhook_id = subscribed(flow, receiver)
    disabled(flow, webhook_id)
    flow.rule(P9)
    flow.rule(P9)
    old, young = held_event_ids(webhook_id)
    eight_days_ago = timezone.now() - timedelta(days=8)
    WebhookDelivery.objects.filter(event_id=old).update(created_at=eight_days_ago)

    answer = flow.ok(flow.post(MANAGER, f"/webhooks/{webhook_id}/enable"))

    assert (answer["held_released"], answer["held_dropped"]) == (1, 1)
    assert [r.headers["webhook-id"] for r in receiver.all()] == [young]
    dropped = WebhookDelivery.objects.get(event_id=old)
    assert dropped.status == "failed" and "held longer than 7 days" in dropped.last_error


def test_the_event_it_was_given_up_on_is_sent_again_with_a_fresh_retry_window(
    flow: Flow, receiver: Receiver
):
    webhook_id = subscribed(flow, receiver)
    receiver.answers = [503]
    flow.rule(P9)
    [given_up] = WebhookDelivery.objects.all()
    two_days_ago = timezone.now() - timedelta(days=2)
    WebhookDelivery.objects.filter(pk=given_up.pk).update(
        status="failed", attempts=17, created_at=two_days_ago, next_attempt_at=None
    )
    disabled(flow, webhook_id, given_up=given_up.pk)
    receiver.answers = [503]  # still failing once after the re-enabling

    answer = flow.ok(flow.post(MANAGER, f"/webhooks/{webhook_id}/enable"))

    assert answer["held_released"] == 1
    given_up.refresh_from_db()
    # Its 18th attempt failed, but it is the first since the re-enabling: retried after
    # the base wait (0.4 s in tests), not given up nor pushed to the window's end.
    assert (given_up.status, given_up.attempts) == ("pending", 18)
    assert given_up.next_attempt_at is not None
    assert given_up.next_attempt_at - timezone.now() < timedelta(seconds=5)
    assert WebhookEndpoint.objects.get(pk=webhook_id).status == "active"


def test_enabling_an_endpoint_that_is_not_disabled_is_a_409_naming_its_status(
    flow: Flow, receiver: Receiver
):
    webhook_id = subscribed(flow, receiver)

    response = flow.post(MANAGER, f"/webhooks/{webhook_id}/enable")

    assert response.status_code == 409
    assert response["Content-Type"] == "application/problem+json"
    problem = response.json()
    assert (problem["status"], problem["webhook_status"]) == (409, "active")
    assert problem["detail"] == f"Only a disabled webhook can be enabled; {webhook_id} is active."
    assert not AuditEvent.objects.filter(action="webhook.enabled").exists()


def test_only_the_tenants_webhook_managers_may_enable_and_a_body_member_is_named(
    flow: Flow, receiver: Receiver
):
    webhook_id = subscribed(flow, receiver)
    disabled(flow, webhook_id)
    grant_zed_webhooks(flow)

    assert flow.post("zed", f"/webhooks/{webhook_id}/enable").status_code == 404
    assert flow.post("rita", f"/webhooks/{webhook_id}/enable").status_code == 403
    wrong = flow.post(MANAGER, f"/webhooks/{webhook_id}/enable", {"force": True})
    assert wrong.status_code == 422 and "force" in wrong.content.decode()
    assert WebhookEndpoint.objects.get(pk=webhook_id).status == "disabled"


def test_the_disabled_email_says_how_to_re_enable_and_a_second_disabling_is_told_again(
    flow: Flow, receiver: Receiver
):
    webhook_id = subscribed(flow, receiver)
    disabled(flow, webhook_id)
    flow.ok(flow.post(MANAGER, f"/webhooks/{webhook_id}/enable"))
    disabled(flow, webhook_id)

    emails = [m for m in mail.outbox if "Webhook disabled" in m.subject]
    assert len(emails) == 2
    body = emails[0].body
    assert f"/api/v1/webhooks/{webhook_id}/enable" in body and "Re-enable" in body
    assert "Create a new endpoint" not in body


def _signed_in(flow: Flow, name: str) -> Client:
    client = Client()
    client.force_login(flow.world.users[name])
    return client


def test_the_webhooks_page_re_enables_a_disabled_endpoint(flow: Flow, receiver: Receiver):
    webhook_id = subscribed(flow, receiver)
    disabled(flow, webhook_id)
    flow.rule(P9)
    client = _signed_in(flow, MANAGER)
    page = client.get("/webhooks/").content.decode()
    action = f'action="/webhooks/{webhook_id}/enable/"'
    assert action in page and f"Re-enable {webhook_id}" in page
    assert flow.on_commit is not None

    with flow.on_commit(execute=True):
        response = client.post(f"/webhooks/{webhook_id}/enable/", follow=True)

    html = response.content.decode()
    assert response.status_code == 200
    assert f"{webhook_id} re-enabled: 1 held events are being sent" in html
    assert action not in html
    assert len(receiver.all()) == 1
    again = client.post(f"/webhooks/{webhook_id}/enable/")
    assert again.status_code == 409  # a calm error page, not a 500


def test_the_admin_action_re_enables_through_the_same_service(flow: Flow, receiver: Receiver):
    webhook_id = subscribed(flow, receiver)
    disabled(flow, webhook_id)
    flow.rule(P9)
    manager = flow.world.users[MANAGER]
    User.objects.filter(pk=manager.pk).update(is_staff=True, is_superuser=True)
    assert flow.on_commit is not None

    with flow.on_commit(execute=True):
        response = _signed_in(flow, MANAGER).post(
            reverse("admin:webhooks_webhookendpoint_changelist"),
            {"action": "enable_selected", "_selected_action": [webhook_id]},
            follow=True,
        )

    assert response.status_code == 200
    assert "re-enabled; 1 held events are being sent" in response.content.decode()
    assert WebhookEndpoint.objects.get(pk=webhook_id).status == "active"
    assert AuditEvent.objects.filter(action="webhook.enabled", actor=f"user:{MANAGER}").exists()
    assert len(receiver.all()) == 1
    change = reverse("admin:webhooks_webhookendpoint_change", args=[webhook_id])
    page = _signed_in(flow, MANAGER).get(change)
    assert page.status_code == 200
    assert WebhookEndpoint.objects.get(pk=webhook_id).secret not in page.content.decode()


def _disabled_gauge(client: Client) -> float:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    return next(
        sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
        if sample.name == "memgov_webhook_endpoints_disabled"
    )


def test_the_disabled_endpoint_alert_clears_once_it_is_re_enabled(
    flow: Flow, receiver: Receiver, settings
):
    settings.MEMGOV_METRICS_TOKEN = TOKEN
    webhook_id = subscribed(flow, receiver)
    disabled(flow, webhook_id)
    assert _disabled_gauge(Client()) == 1  # MemgovWebhookEndpointDisabled: max(...) > 0

    flow.ok(flow.post(MANAGER, f"/webhooks/{webhook_id}/enable"))

    assert _disabled_gauge(Client()) == 0


def test_released_events_take_the_tenants_turns_oldest_first(
    flow: Flow, receiver: Receiver, settings, monkeypatch
):
    settings.MEMGOV_WEBHOOK_TENANT_MAX_IN_FLIGHT = 2
    webhook_id = subscribed(flow, receiver)
    disabled(flow, webhook_id)
    for _ in range(4):
        flow.rule(P9)
    held = list(
        WebhookDelivery.objects.filter(status="held")
        .order_by("created_at")
        .values_list("pk", flat=True)
    )
    asked: list[list[str]] = []
    monkeypatch.setattr(delivery, "request_attempts", asked.append)

    answer = flow.ok(flow.post(MANAGER, f"/webhooks/{webhook_id}/enable"))

    # Decision 0020: the tenant's share (2 slots), its oldest due deliveries first; each
    # attempt that ends asks for the next.
    assert answer["held_released"] == 4
    assert asked == [held[:2]]
