"""Delivering events: fan an event out to the endpoints subscribed to it, post each
delivery signed, retry with exponential backoff for the retry window (24 hours), then
disable the endpoint (docs/design.md, Webhooks and agent interfaces).

No network call happens inside a transaction: an attempt is claimed by a conditional
update, made, then recorded. Retries are scheduled, never slept: a short wait is a Celery
countdown, a long one is left to the ``deliver_due`` sweeper (a countdown longer than the
broker's visibility timeout would be handed out twice); both only ask for an attempt, and
the claim makes it happen once.

Tenants share the webhook workers fairly (issue 42, point 7): a tenant may have at most
``MEMGOV_WEBHOOK_TENANT_MAX_IN_FLIGHT`` attempts claimed at once, across every worker. An
attempt asked for while its tenant is at that cap is deferred at once (no claim, no
network): the delivery stays due. Each attempt that ends asks for its tenant's oldest due
deliveries, as many as the tenant has free slots, so a tenant's backlog drains at its
share, oldest first; the sweeper asks the same way, tenant by tenant. One tenant's slow
receivers hold at most its share of the slots: another tenant's delivery waits for a slot
the slow tenant does not hold, not behind its queue (docs/decisions/0020)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Count, F, Q, QuerySet, Window
from django.db.models.functions import RowNumber
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from core import metrics
from core.models import Tenant
from core.outbox import BROKER_DOWN
from memory.events import REASON_CHARS
from webhooks import signing, transport
from webhooks.addresses import url_target
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.services import DELIVER_TASK, webhook_disable

logger = logging.getLogger(__name__)
# An attempt holds its claim this long past its deadline; a worker that died mid-attempt
# frees it then.
CLAIM_MARGIN = timedelta(seconds=60)
# Longer waits go to the sweeper rather than a countdown (see the module docstring).
MAX_COUNTDOWN = timedelta(minutes=10)
DUE_BATCH = 500
# What an attempt asked for came to, besides a delivery's status.
CLAIMED = "claimed"
SKIPPED = "skipped"  # not due, delivered, or someone else's claim
DEFERRED = "deferred"  # its tenant is at its share of the workers: it waits its turn


def retry_base() -> timedelta:
    return timedelta(seconds=settings.MEMGOV_WEBHOOK_RETRY_BASE_SECONDS)


def retry_window() -> timedelta:
    return timedelta(seconds=settings.MEMGOV_WEBHOOK_RETRY_WINDOW_SECONDS)


def tenant_max_in_flight() -> int:
    """Attempts one tenant may have claimed at once, across every webhook worker."""
    return max(1, int(settings.MEMGOV_WEBHOOK_TENANT_MAX_IN_FLIGHT))


def attempt_deadline() -> float:
    """Seconds one attempt may take in all: resolving, connecting, sending, the answer."""
    return float(settings.MEMGOV_WEBHOOK_DEADLINE_SECONDS)


def next_attempt_at(
    *, created_at: datetime, failed_attempts: int, now: datetime
) -> datetime | None:
    """After the n-th failure wait base·2^(n-1); the last attempt is made when the window
    ends; None once it has ended (give up)."""
    deadline = created_at + retry_window()
    if now >= deadline:
        return None
    wait: timedelta = retry_base() * 2 ** (failed_attempts - 1)
    return min(now + wait, deadline)


def retry_schedule() -> list[timedelta]:
    """Every attempt's time after the event, if each fails at once: for the docs and tests."""
    start = datetime(2000, 1, 1, tzinfo=UTC)
    moments, now, failed = [start], start, 0
    while True:
        failed += 1
        upcoming = next_attempt_at(created_at=start, failed_attempts=failed, now=now)
        if upcoming is None:
            return [moment - start for moment in moments]
        moments.append(upcoming)
        now = upcoming


def body_of(event_type: str, timestamp: str, data: dict[str, Any]) -> str:
    return json.dumps(
        {"type": event_type, "timestamp": timestamp, "data": data},
        separators=(",", ":"),
        ensure_ascii=False,
    )


def event_fan_out(
    *, event_id: str, tenant_id: int, event_type: str, timestamp: str, data: dict[str, Any]
) -> list[str]:
    """One delivery per endpoint subscribed to the event: due at once for an active one,
    held for a disabled one (``webhook_enable`` sends it later). A second run of the same
    event adds none (unique per endpoint and event)."""
    if not WebhookEndpoint.objects.filter(tenant_id=tenant_id, deleted_at__isnull=True).exists():
        return []
    body = body_of(event_type, timestamp, data)
    created: list[str] = []
    with transaction.atomic(durable=True):
        # Locked: a re-enabling commits before this fan-out reads the status or after its
        # held rows exist (and releases them), never in between.
        endpoints = [
            endpoint
            for endpoint in WebhookEndpoint.objects.select_for_update(no_key=True)
            .filter(tenant_id=tenant_id, deleted_at__isnull=True)
            .order_by("pk")
            if event_type in endpoint.events
        ]
        now = timezone.now()
        due = False
        for endpoint in endpoints:
            active = endpoint.status == WebhookEndpoint.Status.ACTIVE
            delivery, new = WebhookDelivery.objects.get_or_create(
                endpoint=endpoint,
                event_id=event_id,
                defaults={
                    "tenant_id": tenant_id,
                    "event_type": event_type,
                    "body": body,
                    "created_at": now,
                    "status": WebhookDelivery.Status.PENDING
                    if active
                    else WebhookDelivery.Status.HELD,
                    "next_attempt_at": now if active else None,
                },
            )
            if new:
                created.append(delivery.pk)
                due = due or active
        if due:
            transaction.on_commit(lambda: tenant_attempts_requested(tenant_id))
    return created


def request_attempts(delivery_ids: list[str]) -> None:
    for delivery_id in delivery_ids:
        request_attempt(delivery_id, timedelta(0))


def request_attempt(delivery_id: str, wait: timedelta) -> None:
    """Ask a worker for an attempt after ``wait``; with the broker down, or for a long
    wait, the ``deliver_due`` sweeper asks instead."""
    if wait > MAX_COUNTDOWN:
        return
    try:
        current_app.tasks[DELIVER_TASK].apply_async(
            args=(delivery_id,), countdown=max(wait.total_seconds(), 0.0)
        )
    except BROKER_DOWN:
        logger.exception("webhook delivery %s not queued; the sweeper will", delivery_id)


def _unclaimed(now: datetime) -> Q:
    return Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)


def _due(now: datetime) -> QuerySet[WebhookDelivery]:
    """Pending deliveries whose time has come and that nobody is attempting."""
    return WebhookDelivery.objects.filter(
        _unclaimed(now), status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now
    )


def _in_flight(now: datetime) -> QuerySet[WebhookDelivery]:
    """Deliveries claimed by an attempt that has not ended (nor outlived its claim)."""
    return WebhookDelivery.objects.filter(
        status=WebhookDelivery.Status.PENDING, claimed_until__gte=now
    )


def tenant_attempts_requested(tenant_id: int) -> list[str]:
    """Ask for the tenant's oldest due deliveries, one per slot of its share it is not
    using. Asked after each of its attempts and after a fan-out, so a deferred delivery
    gets its turn when one of the tenant's own attempts ends. Asking twice for one
    delivery is harmless (the claim)."""
    now = timezone.now()
    free = tenant_max_in_flight() - _in_flight(now).filter(tenant_id=tenant_id).count()
    if free <= 0:
        return []
    due = _due(now).filter(tenant_id=tenant_id).order_by("next_attempt_at", "pk")
    ids = list(due.values_list("pk", flat=True)[:free])
    request_attempts(ids)
    return ids


def deliveries_due(*, now: datetime | None = None) -> list[str]:
    """The sweeper: each tenant's oldest due deliveries, as many as it has free slots
    (retries whose wait was too long for a countdown, or requests that were lost)."""
    moment = now or timezone.now()
    busy = dict(
        _in_flight(moment)
        .order_by()
        .values("tenant_id")
        .annotate(n=Count("pk"))
        .values_list("tenant_id", "n")
    )
    share = tenant_max_in_flight()
    oldest_first = Window(
        RowNumber(), partition_by=[F("tenant_id")], order_by=[F("next_attempt_at"), F("pk")]
    )
    ranked = (
        _due(moment)
        .annotate(turn=oldest_first)
        .filter(turn__lte=share)
        .order_by("next_attempt_at", "pk")
        .values_list("pk", "tenant_id", "turn")[:DUE_BATCH]
    )
    ids = [pk for pk, tenant_id, turn in ranked if turn <= share - busy.get(tenant_id, 0)]
    request_attempts(ids)
    return ids


def _claim(delivery_id: str, now: datetime) -> str:
    """Claim a due delivery for one attempt, unless its tenant already has its share of
    attempts claimed: then it is ``DEFERRED`` (still due), and one of the tenant's own
    attempts asks for it when it ends."""
    tenant_id = _due(now).filter(pk=delivery_id).values_list("tenant_id", flat=True).first()
    if tenant_id is None:
        return SKIPPED
    with transaction.atomic(durable=True):
        # A tenant's claims are counted and made one claimer at a time: two workers must
        # not both see the last free slot. FOR NO KEY UPDATE leaves rows that reference
        # the tenant free to be written.
        list(Tenant.objects.select_for_update(no_key=True).filter(pk=tenant_id).values("pk"))
        if _in_flight(now).filter(tenant_id=tenant_id).count() >= tenant_max_in_flight():
            return DEFERRED
        claimed = (
            _due(now)
            .filter(pk=delivery_id)
            .update(claimed_until=now + timedelta(seconds=attempt_deadline()) + CLAIM_MARGIN)
        )
    return CLAIMED if claimed == 1 else SKIPPED


@dataclass(frozen=True)
class Outcome:
    status_code: int | None
    latency_ms: int
    error: str

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def signing_keys(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    keys = [endpoint.secret]
    until = endpoint.previous_secret_until
    if endpoint.previous_secret and until is not None and until > now:
        keys.append(endpoint.previous_secret)
    return keys


def _post(endpoint: WebhookEndpoint, delivery: WebhookDelivery, now: datetime) -> Outcome:
    started = time.perf_counter()
    deadline = time.monotonic() + attempt_deadline()
    status_code, error = None, ""
    target = url_target(endpoint.url)  # resolved once: the connection goes where checked
    if target.problem is not None:
        error = f"refused: the URL {target.problem}"
    else:
        body = delivery.body.encode()
        headers = signing.signed_headers(
            signing_keys(endpoint, now),
            msg_id=delivery.event_id,
            timestamp=int(time.time()),
            body=body,
        )
        try:
            # Only the status counts: the answer's body is never read, so a receiver
            # cannot make us hold a large one in memory. Redirects are not followed.
            status_code = transport.post(
                endpoint.url,
                addresses=target.addresses,
                body=body,
                headers=headers,
                deadline=deadline,
            )
            if not 200 <= status_code < 300:
                error = f"HTTP {status_code}"
        except transport.TIMED_OUT:
            error = f"no answer within {attempt_deadline():g} seconds"
        except transport.FAILURES as exc:
            error = f"{type(exc).__name__}: {exc}"
    latency = round((time.perf_counter() - started) * 1000)
    return Outcome(status_code, latency, error[:REASON_CHARS])


def delivery_attempt(delivery_id: str) -> str:
    """Post one delivery if it is due and unclaimed and its tenant has a free slot; record
    the outcome, schedule the retry (or give up), then hand the slot on to the tenant's
    next due delivery. Returns the delivery's status, ``skipped`` or ``deferred``."""
    now = timezone.now()
    claim = _claim(delivery_id, now)
    if claim != CLAIMED:
        return claim
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    endpoint = delivery.endpoint
    if endpoint.status != WebhookEndpoint.Status.ACTIVE or endpoint.deleted_at is not None:
        # Disabled since it was due: held for the re-enabling; deleted: never sent.
        status = str(
            WebhookDelivery.Status.FAILED
            if endpoint.deleted_at is not None
            else WebhookDelivery.Status.HELD
        )
        WebhookDelivery.objects.filter(pk=delivery_id).update(
            status=status, next_attempt_at=None, claimed_until=None
        )
    else:
        outcome = _post(endpoint, delivery, now)
        metrics.webhook_attempted(outcome.delivered)
        status = _record(delivery_id, outcome)
    tenant_attempts_requested(delivery.tenant_id)
    return status


def _window_start(delivery: WebhookDelivery) -> datetime:
    """When its retry window began: when it was created, or released by a re-enabling."""
    return delivery.released_at or delivery.created_at


def _delivered_since(delivery: WebhookDelivery) -> bool:
    """A receiver that took other events meanwhile refuses this one only: that delivery
    fails, the endpoint stays. One that took nothing for the whole window is given up."""
    return WebhookDelivery.objects.filter(
        endpoint_id=delivery.endpoint_id,
        status=WebhookDelivery.Status.DELIVERED,
        delivered_at__gte=_window_start(delivery),
    ).exists()


def _record(delivery_id: str, outcome: Outcome) -> str:
    with transaction.atomic(durable=True):
        delivery = WebhookDelivery.objects.select_for_update().get(pk=delivery_id)
        now = timezone.now()
        delivery.attempts += 1
        WebhookAttempt.objects.create(
            delivery=delivery,
            number=delivery.attempts,
            at=now,
            status_code=outcome.status_code,
            latency_ms=outcome.latency_ms,
            error=outcome.error,
        )
        delivery.last_status_code = outcome.status_code
        delivery.last_error = outcome.error
        delivery.claimed_until = None
        if outcome.delivered:
            delivery.status = WebhookDelivery.Status.DELIVERED
            delivery.delivered_at = now
            delivery.next_attempt_at = None
        else:
            upcoming = next_attempt_at(
                created_at=_window_start(delivery),
                failed_attempts=delivery.attempts - delivery.attempts_before_release,
                now=now,
            )
            delivery.next_attempt_at = upcoming
            if upcoming is None:
                delivery.status = WebhookDelivery.Status.FAILED
            else:
                wait = upcoming - now
                transaction.on_commit(lambda: request_attempt(delivery_id, wait))
        delivery.save()
        if delivery.status == WebhookDelivery.Status.FAILED and not _delivered_since(delivery):
            webhook_disable(
                endpoint_id=delivery.endpoint_id,
                failed_delivery_id=delivery.pk,
                reason=(
                    f"no delivery of {delivery.event_id} succeeded in "
                    f"{delivery.attempts} attempts over {retry_window()}: {outcome.error}"
                ),
            )
    return str(delivery.status)


def webhook_gauges() -> Iterator[GaugeMetricFamily]:
    """Deliveries failing: retrying, or given up with their endpoint disabled
    (``/metrics``, registered in webhooks.apps)."""
    retrying = GaugeMetricFamily(
        "memgov_webhook_deliveries_retrying",
        "Webhook deliveries that failed at least once and will be tried again.",
    )
    retrying.add_metric(
        [],
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING, attempts__gt=0
        ).count(),
    )
    yield retrying
    disabled = GaugeMetricFamily(
        "memgov_webhook_endpoints_disabled",
        "Webhook endpoints disabled after a day of failed deliveries.",
    )
    disabled.add_metric(
        [],
        WebhookEndpoint.objects.filter(
            status=WebhookEndpoint.Status.DISABLED, deleted_at__isnull=True
        ).count(),
    )
    yield disabled
