"""The transactional outbox (docs/design.md, Side effects after commit; docs/conventions.md rule 8).

A write records ``Outbox(kind, payload)`` in its own transaction; after commit the row is
dispatched to the Celery task its kind names. A broker outage at commit leaves the row
undispatched, and the beat sweeper sends it later. Claiming a row is a conditional update,
so two dispatchers (the on-commit hook and the sweeper, or two sweepers) send it once.

This is how a lower layer asks for work an upper layer does without importing it: the
upper layer registers the Celery task that handles a kind (``outbox_handle``, called from
its ``AppConfig.ready``), and the writer names only the kind."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from celery import current_app
from django.db import transaction
from django.db.models import Count, F, Min, Q
from django.utils import timezone
from kombu.exceptions import KombuError
from prometheus_client.core import GaugeMetricFamily
from redis.exceptions import RedisError

from core.models import Outbox, Tenant

logger = logging.getLogger(__name__)

# kind → Celery task name; the task receives the payload as keyword arguments.
HANDLERS: dict[str, str] = {}
CLAIM_FOR = timedelta(seconds=30)
SWEEP_AFTER = timedelta(seconds=30)
# What a broker that cannot be reached raises (redis-py errors subclass OSError).
BROKER_DOWN: tuple[type[BaseException], ...] = (KombuError, RedisError, OSError)


def outbox_handle(kind: str, task_name: str) -> None:
    """Register the Celery task that carries out ``kind`` (once, at app start)."""
    if HANDLERS.setdefault(kind, task_name) != task_name:
        raise ValueError(f"outbox kind {kind!r} is already handled by {HANDLERS[kind]}")


def outbox_write(*, kind: str, payload: dict[str, Any], tenant: Tenant | None) -> Outbox:
    """Record a side effect inside the caller's transaction; dispatch it after commit."""
    if kind not in HANDLERS:
        raise ValueError(f"no outbox handler for {kind!r}")
    row = Outbox.objects.create(
        kind=kind, payload=payload, tenant=tenant, created_at=timezone.now()
    )
    transaction.on_commit(lambda: outbox_dispatch(row_id=row.pk))
    return row


def _claim(row_id: int) -> bool:
    now = timezone.now()
    claimed = Outbox.objects.filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now),
        pk=row_id,
        dispatched_at__isnull=True,
    ).update(claimed_until=now + CLAIM_FOR, attempts=F("attempts") + 1)
    return claimed == 1


def outbox_dispatch(*, row_id: int) -> bool:
    """Send one row to its task; False when another dispatcher has it or the broker is
    down (the row stays for the sweeper, with the error recorded)."""
    if not _claim(row_id):
        return False
    row = Outbox.objects.get(pk=row_id)
    try:
        current_app.tasks[HANDLERS[row.kind]].apply_async(kwargs=row.payload)
    except BROKER_DOWN as exc:
        logger.exception("outbox %s (%s) not dispatched; the sweeper retries", row.pk, row.kind)
        Outbox.objects.filter(pk=row.pk).update(claimed_until=None, last_error=repr(exc)[:2000])
        return False
    Outbox.objects.filter(pk=row.pk).update(dispatched_at=timezone.now(), last_error="")
    return True


def outbox_sweep(*, older_than: timedelta | None = None) -> list[int]:
    """Re-dispatch what a broker outage (or a crash right after commit) left behind."""
    cutoff = timezone.now() - (SWEEP_AFTER if older_than is None else older_than)
    due = Outbox.objects.filter(dispatched_at__isnull=True, created_at__lt=cutoff)
    return [pk for pk in due.values_list("pk", flat=True) if outbox_dispatch(row_id=pk)]


def outbox_gauges() -> Iterator[GaugeMetricFamily]:
    """Side effects not yet dispatched (a broker outage piles them up) and the oldest
    one's wait (``/metrics``, registered in core.apps)."""
    waiting = Outbox.objects.filter(dispatched_at__isnull=True).aggregate(
        n=Count("pk"), oldest=Min("created_at")
    )
    outbox = GaugeMetricFamily(
        "memgov_outbox_undispatched", "Side effects waiting to be dispatched."
    )
    outbox.add_metric([], waiting["n"])
    yield outbox
    outbox_age = GaugeMetricFamily(
        "memgov_outbox_oldest_undispatched_age_seconds",
        "How long the oldest undispatched side effect has waited.",
    )
    oldest = waiting["oldest"]
    outbox_age.add_metric([], (timezone.now() - oldest).total_seconds() if oldest else 0.0)
    yield outbox_age
