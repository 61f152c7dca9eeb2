"""Managing webhook endpoints (docs/api.md, Webhooks): only people holding manage_webhooks; the
secret is shown once; private addresses are refused; every change is audited."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import AuditEvent
from tests.approvals.support import Flow
from tests.webhooks.support import MANAGER, create_webhook, grant_zed_webhooks, webhook_manager
from webhooks.models import WebhookEndpoint

URL = "http://127.0.0.1:9/hooks"


@pytest.fixture
def flow(world: Any, django_capture_on_commit_callbacks: Any) -> Flow:
    flow = Flow(world=world, on_commit=django_capture_on_commit_callbacks)
    webhook_manager(flow)
    return flow


def _actions(webhook_id: str) -> list[str]:
    return list(
        AuditEvent.objects.filter(target_type="webhook", target_id=webhook_id)
        .order_by("seq")
        .values_list("action", flat=True)
    )


def test_a_webhook_manager_creates_an_endpoint_and_sees_its_secret_only_once(flow: Flow):
    created = create_webhook(flow, URL, "memory.retired", "task.needs_reverification")

    assert created["id"].startswith("whk_")
    assert created["secret"].startswith("whsec_")
    assert (created["url"], created["status"], created["created_by"]) == (URL, "active", MANAGER)
    assert created["events"] == ["memory.retired", "task.needs_reverification"]
    shown = flow.ok(flow.get(MANAGER, f"/webhooks/{created['id']}"))
    assert "secret" not in shown
    assert shown == {k: v for k, v in created.items() if k != "secret"}
    listed = flow.ok(flow.get(MANAGER, "/webhooks"))
    assert [w["id"] for w in listed["results"]] == [created["id"]]
    assert all("secret" not in w for w in listed["results"])
    [event] = AuditEvent.objects.filter(action="webhook.created")
    assert event.actor == f"user:{MANAGER}"
    assert event.data["host"] == "127.0.0.1" and "url" not in event.data
    assert created["secret"] not in str(event.data)


def test_agents_people_without_the_permission_and_other_tenants_cannot_manage_webhooks(
    flow: Flow,
):
    webhook_id = create_webhook(flow, URL, "memory.retired")["id"]
    grant_zed_webhooks(flow)
    body = {"url": URL, "events": ["memory.retired"]}
    paths = [
        f"/webhooks/{webhook_id}",
        f"/webhooks/{webhook_id}/deliveries",
    ]

    for who in ("agent", "nora", "rita"):  # rita holds every permission but this one
        assert flow.post(who, "/webhooks", body).status_code == 403
        assert flow.get(who, "/webhooks").status_code == 403
        for path in paths:
            assert flow.get(who, path).status_code == 403
        assert flow.post(who, f"/webhooks/{webhook_id}/rotate-secret").status_code == 403
        assert flow.world.client(who).delete(f"/api/v1/webhooks/{webhook_id}").status_code == 403
    for path in paths:
        assert flow.get("zed", path).status_code == 404
    assert flow.post("zed", f"/webhooks/{webhook_id}/rotate-secret").status_code == 404
    assert flow.world.client("zed").delete(f"/api/v1/webhooks/{webhook_id}").status_code == 404
    assert flow.ok(flow.get("zed", "/webhooks"))["results"] == []
    assert WebhookEndpoint.objects.get().deleted_at is None
    assert _actions(webhook_id) == ["webhook.created"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": URL, "events": ["memory.exploded"]}, "events"),
        ({"url": URL, "events": []}, "events"),
        ({"url": "ftp://127.0.0.1/hooks", "events": ["memory.retired"]}, "url"),
        ({"url": "http://bob:pw@127.0.0.1/", "events": ["memory.retired"]}, "url"),
        ({"url": "http:///nohost", "events": ["memory.retired"]}, "url"),
    ],
)
def test_unknown_events_and_unusable_urls_are_refused(flow: Flow, body, field):
    response = flow.post(MANAGER, "/webhooks", body)

    assert response.status_code == 422, response.content
    assert {name.split(".")[0] for name in response.json()["errors"]} == {field}
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hooks",
        "http://localhost/hooks",
        "https://10.1.2.3/hooks",
        "http://192.168.0.5/hooks",
        "http://172.16.9.9/hooks",
        "http://169.254.169.254/latest/meta-data",
        "http://100.64.0.1/hooks",
        "http://[::1]/hooks",
        "http://[fe80::1]/hooks",
        "http://[::ffff:127.0.0.1]/hooks",
        "http://0.0.0.0/hooks",
    ],
)
def test_loopback_private_and_link_local_receivers_are_refused_in_production(
    flow: Flow, settings, url
):
    settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE = False

    response = flow.post(MANAGER, "/webhooks", {"url": url, "events": ["memory.retired"]})

    assert response.status_code == 422, response.content
    assert "address" in response.json()["errors"]["url"][0]
    assert not WebhookEndpoint.objects.exists()


def test_a_public_address_is_accepted_in_production(flow: Flow, settings):
    settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE = False

    created = create_webhook(flow, "https://93.184.215.14/hooks", "memory.retired")

    assert created["status"] == "active"


def test_rotating_the_secret_shows_the_new_one_once_and_keeps_the_old_one_for_a_day(
    flow: Flow,
):
    created = create_webhook(flow, URL, "memory.retired")
    path = f"/webhooks/{created['id']}/rotate-secret"

    rotated = flow.ok(flow.post(MANAGER, path))
    endpoint = WebhookEndpoint.objects.get()

    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != created["secret"]
    assert (endpoint.secret, endpoint.previous_secret) == (rotated["secret"], created["secret"])
    assert rotated["previous_secret_valid_until"] is not None
    assert "secret" not in flow.ok(flow.get(MANAGER, f"/webhooks/{created['id']}"))

    # A leaked secret is dropped at once.
    again = flow.ok(flow.post(MANAGER, path, {"previous_valid_for_seconds": 0}))
    endpoint.refresh_from_db()
    assert (endpoint.secret, endpoint.previous_secret) == (again["secret"], "")
    assert again["previous_secret_valid_until"] is None
    assert _actions(created["id"]) == [
        "webhook.created",
        "webhook.secret_rotated",
        "webhook.secret_rotated",
    ]
    assert flow.post(MANAGER, path, {"previous_valid_for_seconds": -1}).status_code == 422


def test_a_deleted_webhook_is_gone_from_the_api_and_audited(flow: Flow):
    webhook_id = create_webhook(flow, URL, "memory.retired")["id"]

    response = flow.world.client(MANAGER).delete(f"/api/v1/webhooks/{webhook_id}")

    assert response.status_code == 204
    assert flow.get(MANAGER, f"/webhooks/{webhook_id}").status_code == 404
    assert flow.ok(flow.get(MANAGER, "/webhooks"))["results"] == []
    assert flow.world.client(MANAGER).delete(f"/api/v1/webhooks/{webhook_id}").status_code == 404
    assert _actions(webhook_id) == ["webhook.created", "webhook.deleted"]
