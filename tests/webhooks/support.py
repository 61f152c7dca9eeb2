"""Personas and calls for the webhook stories: ``wendy`` manages the tenant's webhooks."""

from __future__ import annotations

import socket
from typing import Any

from accounts.grants import permission_grant
from tests.approvals.support import Flow, person

MANAGER = "wendy"
NAME = "hooks.example.com"  # a receiver's name, resolved by a ``Resolver``
REAL_GETADDRINFO = socket.getaddrinfo


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


class Resolver:
    """``NAME`` answers ``answers`` in turn (the last one again and again); every other
    name is resolved as usual. Installed as ``socket.getaddrinfo``, the system boundary."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked = 0

    def __call__(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != NAME:
            return REAL_GETADDRINFO(host, port, *args, **kwargs)
        answer = self.answers[min(self.asked, len(self.answers) - 1)]
        self.asked += 1
        family = socket.AF_INET6 if ":" in answer else socket.AF_INET
        return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (answer, int(port or 0)))]
