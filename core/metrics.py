"""The Prometheus metric objects, in core so that every layer may record to them.

Only the counters, histograms and gauges, the helpers that label them, and the table of
gauges read from the database at scrape time. Serving them (``/metrics``, a worker's
port) lives in operations.metrics, which imports this module and no app's models: each app
registers the readers of its own tables in ``AppConfig.ready`` (decision 0001), so
recording a resolve or a webhook attempt imports nothing above core (issue 48)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily

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


# Gauges of a state kept in the database (reviews waiting, the outbox and webhook
# backlogs), by reader name: each app registers its own in AppConfig.ready; a scrape
# calls them all, and a database outage leaves them all out (operations.metrics).
ScrapeReader = Callable[[], Iterable[GaugeMetricFamily]]
SCRAPE_READERS: dict[str, ScrapeReader] = {}


def scrape_reader(name: str, read: ScrapeReader) -> None:
    SCRAPE_READERS[name] = read
