"""IPv6 addresses that carry an IPv4 address inside them reach that IPv4 address (through
the host's stack, a NAT64 gateway, a 6to4 or Teredo relay): a loopback or private one is
refused like the IPv4 address itself, when the endpoint is created and before each
delivery (issue 33, point 9)."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from tests.approvals.support import Flow
from tests.webhooks.support import MANAGER, NAME, Resolver, create_webhook
from tests.webhooks.test_events import flow
from webhooks.addresses import is_public
from webhooks.models import WebhookAttempt, WebhookEndpoint

__all__ = ["flow"]  # the fixture, imported for its name
P9 = {"project": "P-9"}
INSIDE = [
    "::ffff:0:7f00:1",  # IPv4-translated (SIIT) 127.0.0.1
    "::ffff:7f00:1",  # IPv4-mapped 127.0.0.1
    "::ffff:a00:1",  # IPv4-mapped 10.0.0.1
    "::7f00:1",  # IPv4-compatible 127.0.0.1 (deprecated, still routed by some stacks)
    "::a9fe:a9fe",  # IPv4-compatible 169.254.169.254
    "64:ff9b::7f00:1",  # NAT64 well-known prefix, 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 well-known prefix, 169.254.169.254
    "64:ff9b:1::808:808",  # local-use NAT64 prefix: an operator's own translator
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:c0a8:1::1",  # 6to4 of 192.168.0.1
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
    "2001:0:a00:1::1",  # Teredo, server 10.0.0.1
]
OUTSIDE = [
    "2606:2800:21f:cb07:6820:80da:af6b:8b2c",  # plain global IPv6
    "::ffff:808:808",  # IPv4-mapped 8.8.8.8
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8
    "2002:808:808::1",  # 6to4 of 8.8.8.8
]


@pytest.mark.parametrize("address", INSIDE)
def test_an_ipv6_address_carrying_an_inside_ipv4_address_is_not_public(address: str):
    assert not is_public(ipaddress.IPv6Address(address))


@pytest.mark.parametrize("address", OUTSIDE)
def test_an_ipv6_address_carrying_a_public_ipv4_address_is_public(address: str):
    assert is_public(ipaddress.IPv6Address(address))


@pytest.mark.parametrize("address", INSIDE)
def test_an_endpoint_at_an_ipv6_form_of_an_inside_address_is_refused(
    flow: Flow, settings, address: str
):
    settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE = False
    body = {"url": f"https://[{address}]/hooks", "events": ["memory.retired"]}

    response = flow.post(MANAGER, "/webhooks", body)

    assert response.status_code == 422, response.content
    assert "address" in response.json()["errors"]["url"][0]
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize("address", OUTSIDE)
def test_an_endpoint_at_an_ipv6_form_of_a_public_address_is_accepted(
    flow: Flow, settings, address: str
):
    settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE = False

    created = create_webhook(flow, f"https://[{address}]/hooks", "memory.retired")

    assert created["status"] == "active"


@pytest.mark.parametrize("address", INSIDE)
def test_a_name_resolving_to_an_ipv6_form_of_an_inside_address_is_not_posted_to(
    flow: Flow, settings, monkeypatch: pytest.MonkeyPatch, address: str
):
    # Given an endpoint whose name was public when it was created.
    settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE = False
    resolver = Resolver("93.184.215.14")
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    create_webhook(flow, f"https://{NAME}/hooks", "memory.pending_review")

    # When it resolves to the IPv6 form of an inside address at delivery time.
    resolver.answers = [address]
    flow.rule(P9)

    # Then the attempt is refused before any connection.
    [attempt] = WebhookAttempt.objects.all()
    assert attempt.status_code is None
    assert attempt.error.startswith(f"refused: the URL host {NAME} resolves to"), attempt.error
