"""Prometheus metrics (``/metrics``), safe under gunicorn's several worker processes.

Counters and histograms are defined in core.metrics, where every layer may import them,
and recorded where things happen (requests, resolves, check runs, Celery tasks); this
module serves them. Under gunicorn each process writes them to PROMETHEUS_MULTIPROC_DIR
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
from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector
from redis import Redis
from redis.exceptions import RedisError

from core.metrics import SCRAPE_READERS
from operations.beat import LEASE_KEY
from operations.queues import QUEUES

SENT_AT_HEADER = "memgov_sent_at"


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
    """Read at scrape time: the queue, beat's lease, PostgreSQL's connections, and the
    apps' gauges of what waits in their tables (core.metrics.SCRAPE_READERS)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from self._queue()
        yield from self._beat_leader()
        try:  # gathered first: a database outage leaves these out, never fails the scrape
            from_database = [
                *(gauge for read in SCRAPE_READERS.values() for gauge in read()),
                *self._database_connections(),
            ]
        except DatabaseError:
            yield _database_up(False)
            return
        yield _database_up(True)
        yield from from_database

    def _beat_leader(self) -> Iterator[GaugeMetricFamily]:
        """Whether a beat sends the schedule: its lease lapses within
        MEMGOV_BEAT_LEASE_SECONDS of the last tick of the last leader (operations/beat.py).
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
