"""Personas and calls for the webhook stories: ``wendy`` manages the tenant's webhooks."""

from __future__ import annotations

from typing import Any

from memory.grants import permission_grant
from tests.approvals.support import Flow, person

MANAGER = "wendy"


def webhook_manager(flow: Flow) -> str:
    if MANAGER not in flow.world.users:
        person(flow.world, MANAGER, "manage_webhooks")
    return MANAGER


def grant_zed_webhooks(flow: Flow) -> None:
    """Another tenant's person who manages webhooks there: still a stranger here."""
    world = flow.world
    permission_grant(tenant=world.other_tenant, user=world.users["zed"], codename="manage_webhooks")


def create_webhook(flow: Flow, url: str, *events: str, who: str = MANAGER) -> Any:
    body = {"url": url, "events": list(events), "description": "agent runner"}
    return flow.ok(flow.post(who, "/webhooks", body), 201)
