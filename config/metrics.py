"""Prometheus metrics (``/metrics``), safe under gunicorn's several worker processes.

Counters and histograms are recorded where things happen (requests, resolves, check
runs, Celery tasks); under gunicorn each process writes them to PROMETHEUS_MULTIPROC_DIR
(deploy/gunicorn.conf.py) and a scrape adds them up. What is a state, not an event —
each Celery queue's length and the age of its oldest message, reviews waiting by kind,
the outbox and webhook backlogs, PostgreSQL's connections against its limit — is read at
scrape time from Redis and the database, so every replica reports the truth.

Cache hit ratio: ``sum(rate(memgov_resolve_cache_total{outcome="hit"}[5m])) /
sum(rate(memgov_resolve_cache_total{outcome=~"hit|miss"}[5m]))``."""

from __future__ import annotations

import functools
import hmac
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Count, Min
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector
from redis import Redis
from redis.exceptions import RedisError

from config.beat import LEASE_KEY
from config.queues import QUEUES

SENT_AT_HEADER = "memgov_sent_at"

REQUEST_LATENCY = Histogram(
    "memgov_http_request_duration_seconds",
    "HTTP request latency by URL route (the pattern, never the raw path).",
    ["route", "method", "status"],
)
RESOLVE_LATENCY = Histogram(
    "memgov_resolve_duration_seconds",
    "Time to answer a resolve, cache included.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
)
RESOLVE_CACHE = Counter(
    "memgov_resolve_cache",
    "Resolves by cache outcome: hit, miss, bypassed (Redis cooling down), error "
    "(Redis failed), uncacheable (valid_at/known_at given) or disabled.",
    ["outcome"],
)
CHECK_RUN_DURATION = Histogram(
    "memgov_check_run_duration_seconds",
    "Scenario check runs (preview, gate, revalidation) by outcome: passed when every "
    "scenario passed.",
    ["run", "outcome"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
TASK_DURATION = Histogram(
    "memgov_celery_task_duration_seconds",
    "Celery task run time by task and final state.",
    ["task", "state"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0),
)
TASK_LAG = Histogram(
    "memgov_celery_task_lag_seconds",
    "Time from enqueue to the start of the task in a worker.",
    ["task"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0),
)


def resolve_cache_outcome(outcome: str) -> None:
    _cache_outcome(outcome).inc()


@functools.cache
def _cache_outcome(outcome: str) -> Counter:
    """The counter of one outcome, looked up once (``labels`` takes a lock and a dict
    lookup on every call; resolve counts one outcome per request)."""
    return RESOLVE_CACHE.labels(outcome)


def check_run_finished(run: str, passed: bool, seconds: float) -> None:
    CHECK_RUN_DURATION.labels(run, "passed" if passed else "failed").observe(seconds)


WEBHOOK_ATTEMPTS = Counter(
    "memgov_webhook_attempts",
    "Webhook delivery attempts by outcome: delivered or failed (refused, timed out, unreachable).",
    ["outcome"],
)
# Per process; "livesum" adds up the live gunicorn workers (dead ones drop out), so the
# scrape shows the web role's busy threads and its thread capacity.
REQUESTS_IN_FLIGHT = Gauge(
    "memgov_web_requests_in_flight",
    "Requests being answered now, over every web worker process.",
    multiprocess_mode="livesum",
)
WEB_THREADS = Gauge(
    "memgov_web_threads",
    "Request threads of the web worker processes (saturation: in flight / threads).",
    multiprocess_mode="livesum",
)


def webhook_attempted(delivered: bool) -> None:
    WEBHOOK_ATTEMPTS.labels("delivered" if delivered else "failed").inc()


@functools.cache
def _broker_client(url: str) -> Redis:
    """One pooled client per process: a scrape opens no connection of its own."""
    return Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)


def queue_heads() -> dict[str, tuple[int, bytes | None]]:
    """Each Celery queue's length and its oldest message, without reading the rest: a
    backlog of a million messages costs a scrape two commands per queue, not a million."""
    broker = str(settings.CELERY_BROKER_URL)
    if broker.startswith("filesystem://"):
        folder = Path(str(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]))
        heads: dict[str, tuple[int, bytes | None]] = {}
        for queue in QUEUES:
            files = list(folder.glob(f"*.{queue}.msg"))
            oldest = min(files, key=lambda p: p.stat().st_mtime) if files else None
            heads[queue] = (len(files), oldest.read_bytes() if oldest else None)
        return heads
    pipe = _broker_client(broker).pipeline(transaction=False)
    for queue in QUEUES:
        pipe.llen(queue)
        pipe.lindex(queue, -1)  # kombu pushes on the left: the oldest is the last
    answers: list[Any] = pipe.execute()
    return {queue: (int(answers[2 * i]), answers[2 * i + 1]) for i, queue in enumerate(QUEUES)}


def _database_up(answered: bool) -> GaugeMetricFamily:
    """1 when this scrape's queries reached PostgreSQL: the database itself, seen from a
    web pod, whether or not the pod is in the Service."""
    up = GaugeMetricFamily("memgov_database_up", "1 when PostgreSQL answered this scrape.")
    up.add_metric([], int(answered))
    return up


def _sent_at(raw: bytes) -> float | None:
    try:
        headers = json.loads(raw).get("headers") or {}
        return float(headers[SENT_AT_HEADER])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


class LiveCollector(Collector):
    """Read at scrape time: the queue and the reviews that wait."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from self._queue()
        yield from self._beat_leader()
        try:  # gathered first: a database outage leaves these out, never fails the scrape
            from_database = [*self._reviews(), *self._backlogs(), *self._database_connections()]
        except DatabaseError:
            yield _database_up(False)
            return
        yield _database_up(True)
        yield from from_database

    def _beat_leader(self) -> Iterator[GaugeMetricFamily]:
        """Whether a beat sends the schedule: its lease lapses within
        MEMGOV_BEAT_LEASE_SECONDS of the last tick of the last leader (config/beat.py).
        A broker that does not answer holds no lease, so no beat sends."""
        broker = str(settings.CELERY_BROKER_URL)
        if broker.startswith("filesystem://"):
            return  # make run's beat keeps its schedule in a file and takes no lease
        try:
            held = bool(_broker_client(broker).exists(LEASE_KEY))
        except RedisError:
            held = False
        leader = GaugeMetricFamily(
            "memgov_beat_leader", "1 while a beat holds the lease and sends the schedule."
        )
        leader.add_metric([], int(held))
        yield leader

    def _queue(self) -> Iterator[GaugeMetricFamily]:
        length = GaugeMetricFamily(
            "memgov_celery_queue_length", "Messages waiting in the Celery queue.", labels=["queue"]
        )
        age = GaugeMetricFamily(
            "memgov_celery_oldest_message_age_seconds",
            "Age of the oldest waiting message (the lag a new task would see).",
            labels=["queue"],
        )
        try:
            heads = queue_heads()
        except Exception:  # a broker outage shows as missing series, never a 500
            return
        for queue, (waiting, oldest) in heads.items():
            length.add_metric([queue], waiting)
            sent = _sent_at(oldest) if oldest else None
            age.add_metric([queue], max(0.0, time.time() - sent) if sent else 0.0)
        yield length
        yield age

    def _reviews(self) -> Iterator[GaugeMetricFamily]:
        # Imported here: scrape time only: config.celery imports this before apps load.
        from core.kinds import MemoryKind  # noqa: PLC0415
        from memory.models import MemoryVersion, Status  # noqa: PLC0415

        count = GaugeMetricFamily(
            "memgov_pending_reviews", "Versions waiting for review, by kind.", labels=["kind"]
        )
        age = GaugeMetricFamily(
            "memgov_pending_review_oldest_age_seconds",
            "How long the oldest version of each kind has waited for review.",
            labels=["kind"],
        )
        rows = {
            row["kind"]: row
            for row in MemoryVersion.objects.filter(status=Status.PENDING_REVIEW)
            .values("kind")
            .annotate(n=Count("pk"), oldest=Min("status_changed_at"))
        }
        now = timezone.now()
        for kind in MemoryKind.values:
            row = rows.get(kind)
            count.add_metric([kind], row["n"] if row else 0)
            waited = (now - row["oldest"]).total_seconds() if row else 0.0
            age.add_metric([kind], max(0.0, waited))
        yield count
        yield age

    def _backlogs(self) -> Iterator[GaugeMetricFamily]:
        """Side effects not yet dispatched (a broker outage piles them up) and webhook
        deliveries failing (retrying, or given up with their endpoint disabled)."""
        from core.models import Outbox  # noqa: PLC0415 - scrape time only
        from webhooks.models import WebhookDelivery, WebhookEndpoint  # noqa: PLC0415

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

    def _database_connections(self) -> Iterator[GaugeMetricFamily]:
        """PostgreSQL's connections in use against its limit: every web thread, worker
        process and beat holds one (docs/operations.md, Connection budget)."""
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*), current_setting('max_connections')::int "
                "FROM pg_stat_activity WHERE backend_type = 'client backend'"
            )
            used, limit = cursor.fetchone()
        in_use = GaugeMetricFamily(
            "memgov_db_connections", "Connections open to the PostgreSQL server (all clients)."
        )
        in_use.add_metric([], used)
        yield in_use
        maximum = GaugeMetricFamily("memgov_db_max_connections", "PostgreSQL's max_connections.")
        maximum.add_metric([], limit)
        yield maximum


def recorded_registry() -> CollectorRegistry:
    """Every process's samples (multi-process mode), or this process's."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    recorded = CollectorRegistry()
    multiprocess.MultiProcessCollector(recorded)  # type: ignore[no-untyped-call]
    return recorded


def exposition() -> bytes:
    """What was recorded, and the live gauges."""
    live = CollectorRegistry(auto_describe=False)
    live.register(LiveCollector())
    return generate_latest(recorded_registry()) + generate_latest(live)


def serve_worker_metrics(port: int, host: str = "0.0.0.0") -> tuple[str, int]:  # noqa: S104
    """A Celery worker's own scrape endpoint (task durations and lag, check runs run by
    its pool): plain HTTP on ``port``, for the cluster's Prometheus only (the
    NetworkPolicy admits the monitoring namespace alone). Prefork children write to
    PROMETHEUS_MULTIPROC_DIR, set before the worker starts. ``host``: the address to
    listen on (MEMGOV_WORKER_METRICS_HOST)."""
    server, _ = start_http_server(port, addr=host, registry=recorded_registry())
    listening, bound = server.server_address[:2]
    return str(listening), int(bound)


def metrics_view(request: HttpRequest) -> HttpResponse:
    """404 unless MEMGOV_METRICS_TOKEN is set; 403 without ``Bearer <token>``."""
    token: str = settings.MEMGOV_METRICS_TOKEN
    if not token:
        return HttpResponse(status=404)
    given = request.headers.get("Authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        return HttpResponse(status=403)
    # The classic text format: every Prometheus 2 and 3 server reads it.
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_PLAIN_0_0_4)
