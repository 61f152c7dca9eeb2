"""What one delivery attempt may cost and where it may go (issue 33, point 9): a total
deadline for connecting, sending and the whole answer, so a receiver trickling its answer
cannot hold a worker; and the connection goes to the address that was checked, not to
whatever the name resolves to a moment later (DNS rebinding). Tasks run in-process
(eager) against real servers on 127.0.0.1; only the resolver, the system boundary, is
scripted."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.approvals.support import Flow
from tests.webhooks.receiver import live_receiver, trickling_receiver
from tests.webhooks.support import NAME, Resolver, create_webhook
from tests.webhooks.test_events import flow
from tests.webhooks.tls import server_context
from webhooks.models import WebhookAttempt

__all__ = ["flow"]  # the fixture, imported for its name
P9 = {"project": "P-9"}
PUBLIC = "93.184.215.14"  # a global address: the check lets it through
REAL_CREATE_CONNECTION = socket.create_connection


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Resolver]:
    resolver = Resolver(PUBLIC)
    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    yield resolver


def only_attempt() -> WebhookAttempt:
    [attempt] = WebhookAttempt.objects.all()
    return attempt


def test_a_receiver_trickling_its_answer_is_cut_off_at_the_deadline(flow: Flow, settings):
    # Given a deadline of one second, and a receiver that sends a byte every 0.3 s: each
    # read is far quicker than any per-read timeout, the whole answer takes a minute.
    settings.MEMGOV_WEBHOOK_DEADLINE_SECONDS = 1.0
    with trickling_receiver(interval=0.3, length=60) as trickle:
        create_webhook(flow, trickle.url, "memory.pending_review")

        # When an event is delivered.
        started = time.monotonic()
        flow.rule(P9)
        took = time.monotonic() - started

    # Then the attempt ended at the deadline, as a failure to be retried.
    assert len(trickle.connections) == 1 and trickle.finished == []
    assert took < 5, f"the proposal waited {took:.1f} s for the receiver"
    attempt = only_attempt()
    assert attempt.status_code is None
    assert attempt.error == "no answer within 1 seconds"
    assert 900 <= attempt.latency_ms < 2500
    assert attempt.delivery.status == "pending"


def test_the_deadline_is_ten_seconds_unless_configured(settings):
    assert settings.MEMGOV_WEBHOOK_DEADLINE_SECONDS == 10.0


def test_a_name_rebound_to_loopback_after_the_check_is_not_followed(
    flow: Flow, settings, resolver: Resolver, monkeypatch: pytest.MonkeyPatch
):
    # Given production's address check, and a receiver inside, on 127.0.0.1.
    settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE = False
    with live_receiver() as inside:
        port = inside.url.split(":")[2].split("/")[0]
        url = f"http://{NAME}:{port}/hooks/memgov"
        create_webhook(flow, url, "memory.pending_review")  # NAME is public now

        # When the name answers its public address once more, then 127.0.0.1 (an
        # attacker's DNS with a zero TTL); the public host refuses connections.
        rebinding = Resolver(PUBLIC, "127.0.0.1")
        monkeypatch.setattr(socket, "getaddrinfo", rebinding)
        connected: list[tuple[str, int]] = []

        def connect(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
            connected.append((str(address[0]), int(address[1])))
            if address[0] == PUBLIC:
                raise ConnectionRefusedError(111, "Connection refused")
            return REAL_CREATE_CONNECTION(address, *args, **kwargs)

        monkeypatch.setattr(socket, "create_connection", connect)
        flow.rule(P9)

    # Then the attempt went to the checked address only; nothing reached the inside.
    assert inside.all() == []
    assert connected == [(PUBLIC, int(port))]
    assert rebinding.asked == 1
    attempt = only_attempt()
    assert attempt.status_code is None and PUBLIC in attempt.error


def test_a_pinned_address_keeps_the_names_host_header(flow: Flow, resolver: Resolver):
    resolver.answers = ["127.0.0.1"]
    with live_receiver(host=NAME) as receiver:
        create_webhook(flow, receiver.url, "memory.pending_review")

        flow.rule(P9)

    [received] = receiver.all()
    port = receiver.url.split(":")[2].split("/")[0]
    assert received.headers["host"] == f"{NAME}:{port}"
    assert only_attempt().status_code == 200


@pytest.mark.parametrize(("certified", "delivered"), [(NAME, True), ("other.example.com", False)])
def test_over_https_the_certificate_is_checked_for_the_name_not_the_address(
    flow: Flow,
    resolver: Resolver,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    certified: str,
    delivered: bool,
):
    # Given a TLS receiver on 127.0.0.1 whose certificate names ``certified``, issued by
    # a CA the sender trusts, and NAME resolving to 127.0.0.1.
    resolver.answers = ["127.0.0.1"]
    tls, ca_file = server_context(tmp_path, certified)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    with live_receiver(tls=tls, host=NAME) as receiver:
        create_webhook(flow, receiver.url, "memory.pending_review")

        flow.rule(P9)

    # Then it is delivered only when the certificate names NAME (SNI and verification
    # use the name, the connection the address).
    attempt = only_attempt()
    if delivered:
        assert attempt.status_code == 200 and len(receiver.all()) == 1
    else:
        assert attempt.status_code is None and receiver.all() == []
        assert "CERTIFICATE_VERIFY_FAILED" in attempt.error


def test_the_delivery_log_names_the_address_it_could_not_reach(
    flow: Flow, resolver: Resolver, settings
):
    settings.MEMGOV_WEBHOOK_DEADLINE_SECONDS = 1.0
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    resolver.answers = ["127.0.0.1"]
    create_webhook(flow, f"http://{NAME}:{port}/hooks", "memory.pending_review")

    flow.rule(P9)

    attempt = only_attempt()
    assert attempt.status_code is None
    assert f"127.0.0.1:{port}" in attempt.error, attempt.error
