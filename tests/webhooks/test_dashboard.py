"""The webhooks page: a manager sees each endpoint with its delivery log; the menu shows
the page only to people holding manage_webhooks; others get a 403 page."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.approvals.support import Flow
from tests.webhooks.receiver import live_receiver
from tests.webhooks.support import MANAGER, create_webhook, webhook_manager

P9 = {"project": "P-9"}


@pytest.fixture
def flow(world: Any, django_capture_on_commit_callbacks: Any) -> Flow:
    flow = Flow(world=world, on_commit=django_capture_on_commit_callbacks)
    webhook_manager(flow)
    return flow


def _signed_in(flow: Flow, name: str) -> Client:
    client = Client()
    client.force_login(flow.world.users[name])
    return client


def test_a_manager_sees_each_delivery_with_its_status_code_and_latency(flow: Flow):
    with live_receiver() as receiver:
        receiver.answers = [500]
        webhook = create_webhook(flow, receiver.url, "memory.pending_review")
        flow.rule(P9)

    page = _signed_in(flow, MANAGER).get("/webhooks/")

    html = page.content.decode()
    assert page.status_code == 200
    assert webhook["id"] in html and receiver.url in html
    assert "memory.pending_review" in html and "pending" in html
    assert " · 500 · " in html and "HTTP 500" in html and " ms" in html
    assert webhook["secret"] not in html
    assert 'href="/webhooks/"' in html


def test_the_menu_and_the_page_are_only_for_people_who_manage_webhooks(flow: Flow):
    client = _signed_in(flow, "rita")

    queue = client.get("/")
    page = client.get("/webhooks/")

    assert queue.status_code == 200 and 'href="/webhooks/"' not in queue.content.decode()
    assert page.status_code == 403
    # Someone who reviews nothing starts on their own memories: the menu is the same.
    start = _signed_in(flow, MANAGER).get("/", follow=True)
    assert 'href="/webhooks/"' in start.content.decode()


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (24 * 3600, "24 hours"),
        (2 * 3600, "2 hours"),
        (90 * 60, "90 minutes"),
        (3 * 86400, "3 days"),
    ],
)
def test_the_page_says_how_long_deliveries_are_retried_as_configured(
    flow: Flow, settings: Any, seconds: int, words: str
):
    settings.MEMGOV_WEBHOOK_RETRY_WINDOW_SECONDS = seconds

    html = _signed_in(flow, MANAGER).get("/webhooks/").content.decode()

    assert f"signed per Standard Webhooks and retried for {words}." in html
