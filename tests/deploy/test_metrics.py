"""``/metrics`` speaks Prometheus' text format to a scraper holding the token, and shows
what an operator watches: request latency by route, resolve latency and cache outcomes,
check runs, the Celery queue and its lag, reviews waiting by kind."""

from __future__ import annotations

import json
import re
import socket
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
import yaml
from django.conf import settings
from django.db import OperationalError, connection
from django.utils import timezone
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from approvals import tasks
from config.celery import app as celery_app
from core import redis_client
from core.metrics import SCRAPE_READERS, WEBHOOK_ATTEMPTS, webhook_attempted
from core.models import Outbox
from memory.models import MemoryVersion
from operations.metrics import serve_worker_metrics
from operations.queues import prepare_embedded_broker
from tests.conftest import later, needs
from tests.deploy.support import DEPLOY, ROOT, is_celery_worker, procfile, procfile_environment
from tests.resolve.conftest import Story
from webhooks.models import WebhookDelivery, WebhookEndpoint

TOKEN = "scrape-token-for-tests"


@pytest.fixture
def story(world, django_capture_on_commit_callbacks) -> Iterator[Story]:
    yield Story(world=world, on_commit=django_capture_on_commit_callbacks)


@pytest.fixture
def scraper(client, settings) -> Any:
    settings.MEMGOV_METRICS_TOKEN = TOKEN

    def scrape() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 200
        assert response["Content-Type"].startswith("text/plain; version=0.0.4")
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.content.decode())
            for sample in family.samples
        }

    return scrape


def sample(scraped: dict[Any, float], name: str, **labels: str) -> float:
    return scraped.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_are_a_404_until_a_token_is_configured(client, settings, db):
    settings.MEMGOV_METRICS_TOKEN = ""

    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer anything").status_code == 404


@pytest.mark.parametrize("header", [None, "Bearer wrong-token", TOKEN, f"Basic {TOKEN}"])
def test_metrics_refuse_a_scraper_without_the_token(client, settings, db, header):
    settings.MEMGOV_METRICS_TOKEN = TOKEN
    extra = {"HTTP_AUTHORIZATION": header} if header else {}

    response = client.get("/metrics", **extra)

    assert response.status_code == 403
    assert b"memgov_" not in response.content


def test_a_scraper_calling_the_pod_by_ip_gets_the_metrics(client, settings, db):
    settings.MEMGOV_METRICS_TOKEN = TOKEN

    response = client.get(
        "/metrics", HTTP_HOST="10.42.0.17:8000", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"
    )

    assert response.status_code == 200
    assert b"memgov_pending_reviews" in response.content


def test_a_resolve_and_a_check_run_show_up_in_the_series(world, story, scraper):
    before = scraper()
    dana = story.entity("Dana Kim", "customer")
    story.activate(  # a preference: one gate run, through the real checks
        kind="preference",
        subject=dana,
        field="delivery_address",
        value="12 Elm Street",
        scope={},
        expires_at=None,
    )
    agent = world.client("agent")
    body = {"subject": dana, "context": {"task": "order-b"}}
    for _ in range(2):
        assert agent.post("/api/v1/resolve", body, format="json").status_code == 200

    after = scraper()

    def delta(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert delta("memgov_check_run_duration_seconds_count", run="gate", outcome="passed") == 1
    assert delta("memgov_resolve_duration_seconds_count") == 2
    route = {"route": "/api/v1/resolve", "method": "POST", "status": "200"}
    assert delta("memgov_http_request_duration_seconds_count", **route) == 2
    if redis_client.enabled():  # with Redis: the first is computed, the second served from cache
        assert delta("memgov_resolve_cache_total", outcome="miss") == 1
        assert delta("memgov_resolve_cache_total", outcome="hit") == 1
    else:
        assert delta("memgov_resolve_cache_total", outcome="disabled") == 2


def test_reviews_waiting_are_counted_by_kind(world, story, scraper):
    dana = story.entity("Dana Kim", "customer")
    story.propose(
        kind="task_fact",
        subject=dana,
        field="delivery_address",
        value="4 Dock Road",
        scope={"task": "order-a"},
        expires_at=later(1),
    )

    scraped = scraper()

    assert MemoryVersion.objects.filter(status="pending_review").count() == 1
    assert sample(scraped, "memgov_pending_reviews", kind="task_fact") == 1
    assert sample(scraped, "memgov_pending_reviews", kind="enterprise_rule") == 0
    assert 0 <= sample(scraped, "memgov_pending_review_oldest_age_seconds", kind="task_fact") < 60


@pytest.fixture
def queue() -> Iterator[None]:
    """Tasks go to the broker of the settings and stay there: no worker runs."""
    prepare_embedded_broker()
    celery_app.conf.task_always_eager = False  # the autouse fixture restores it
    celery_app.control.purge()
    yield
    celery_app.control.purge()


def test_the_queue_length_and_the_age_of_its_oldest_message(scraper, db, queue):
    empty = scraper()
    tasks.expire_due_memory.delay()
    tasks.sweep_stuck_checks.delay()

    waiting = scraper()

    assert sample(empty, "memgov_celery_queue_length", queue="celery") == 0
    assert sample(waiting, "memgov_celery_queue_length", queue="celery") == 2
    assert 0 < sample(waiting, "memgov_celery_oldest_message_age_seconds", queue="celery") < 60


def test_a_worker_serves_its_task_and_check_series_on_its_own_port(db):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    _, bound = serve_worker_metrics(port)
    result = tasks.expire_due_memory.apply()

    with urllib.request.urlopen(f"http://127.0.0.1:{bound}/metrics", timeout=5) as answer:
        text = answer.read().decode()

    assert result.successful()
    assert bound == port
    families = {f.name: f for f in text_string_to_metric_families(text)}
    runs = [
        s.value
        for s in families["memgov_celery_task_duration_seconds"].samples
        if s.name.endswith("_count") and s.labels["task"] == "approvals.tasks.expire_due_memory"
    ]
    assert runs and runs[0] >= 1


LIVE = {
    "memgov_celery_queue_length",
    "memgov_celery_oldest_message_age_seconds",
    "memgov_pending_reviews",
    "memgov_pending_review_oldest_age_seconds",
    "memgov_outbox_undispatched",
    "memgov_outbox_oldest_undispatched_age_seconds",
    "memgov_webhook_deliveries_retrying",
    "memgov_webhook_endpoints_disabled",
    "memgov_db_connections",
    "memgov_db_max_connections",
    "memgov_database_up",
    "memgov_beat_leader",
}


def _recorded() -> set[str]:
    suffixes = {"histogram": ("_bucket", "_count", "_sum"), "counter": ("_total",)}
    return {
        family.name + suffix
        for family in REGISTRY.collect()
        for suffix in suffixes.get(family.type, ("",))
    }


def _series(exprs: list[str]) -> set[str]:
    return {name for e in exprs for name in re.findall(r"\b(memgov_[a-z_]+)", e)}


def test_the_grafana_dashboard_queries_only_series_that_exist():
    dashboard = json.loads((DEPLOY / "grafana" / "memgov.json").read_text())
    used = _series([t["expr"] for p in dashboard["panels"] for t in p["targets"]])

    assert len(dashboard["panels"]) == 17
    assert used - LIVE <= _recorded()
    assert used >= LIVE
    assert "memgov_resolve_cache_total" in used
    assert {"memgov_web_requests_in_flight", "memgov_web_threads"} <= used


def test_every_alert_rule_names_existing_series_and_a_runbook_that_exists():
    rules = yaml.safe_load((DEPLOY / "prometheus" / "memgov-rules.yaml").read_text())
    [group] = rules["groups"]
    operations = (DEPLOY.parent / "docs" / "operations.md").read_text()
    anchors = {
        "#" + re.sub(r"[^a-z0-9 -]", "", line.lstrip("# ").lower()).replace(" ", "-")
        for line in operations.splitlines()
        if line.startswith("#")
    }

    used = _series([rule["expr"] for rule in group["rules"]])
    assert used - LIVE <= _recorded()
    for rule in group["rules"]:
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, rule["alert"]
        runbook = rule["annotations"]["runbook"]
        assert runbook.startswith("docs/operations.md#"), rule["alert"]
        assert runbook.removeprefix("docs/operations.md") in anchors, runbook
    assert "memgov_db_connections" in used  # point 12: the connection budget is alerted on


@needs("redis")
def test_a_scrape_reads_each_queue_by_its_head_not_the_whole_queue(scraper, db, queue):
    """LLEN and LINDEX per queue: a backlog costs a scrape nothing more."""
    broker = redis.Redis.from_url(str(settings.CELERY_BROKER_URL))
    for _ in range(3):
        tasks.expire_due_memory.delay()

    def calls(command: str) -> int:
        return int(broker.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))

    before = {command: calls(command) for command in ("lrange", "llen", "lindex")}
    scraped = scraper()
    after = {command: calls(command) for command in ("lrange", "llen", "lindex")}

    assert sample(scraped, "memgov_celery_queue_length", queue="celery") == 3
    assert sample(scraped, "memgov_celery_queue_length", queue="webhooks") == 0
    assert after["lrange"] == before["lrange"]
    assert after["llen"] - before["llen"] >= 2  # both queues
    assert after["lindex"] - before["lindex"] >= 2


def test_the_outbox_and_webhook_backlogs_are_gauged(world, scraper):
    now = timezone.now()
    Outbox.objects.create(kind="notify", payload={}, created_at=now - timedelta(minutes=2))
    endpoint = WebhookEndpoint.objects.create(
        tenant=world.tenant,
        url="https://receiver.example/hook",
        secret="s",
        created_by=world.users["rita"],
        created_at=now,
        status=WebhookEndpoint.Status.DISABLED,
    )
    WebhookDelivery.objects.create(
        tenant=world.tenant,
        endpoint=endpoint,
        event_id="evt_1",
        event_type="memory.activated",
        body="{}",
        attempts=2,
        created_at=now,
    )

    scraped = scraper()

    assert sample(scraped, "memgov_outbox_undispatched") == 1
    assert 110 < sample(scraped, "memgov_outbox_oldest_undispatched_age_seconds") < 600
    assert sample(scraped, "memgov_webhook_deliveries_retrying") == 1
    assert sample(scraped, "memgov_webhook_endpoints_disabled") == 1


@needs("postgres")
def test_postgresql_connections_are_gauged_against_its_limit(scraper, db):
    with connection.cursor() as cursor:
        cursor.execute("SHOW max_connections")
        limit = int(cursor.fetchone()[0])

    scraped = scraper()

    assert sample(scraped, "memgov_db_max_connections") == limit
    assert 1 <= sample(scraped, "memgov_db_connections") <= limit


def test_a_failed_webhook_attempt_is_counted(world):
    failed = WEBHOOK_ATTEMPTS.labels("failed")
    before = failed._value.get()

    webhook_attempted(delivered=False)

    assert failed._value.get() == before + 1


def test_a_scrape_during_a_database_outage_still_answers_with_the_queue(scraper, db, monkeypatch):
    def down() -> Iterator[Any]:
        raise OperationalError("connection timed out")

    monkeypatch.setitem(SCRAPE_READERS, "approvals.pending_reviews", down)

    scraped = scraper()

    assert ("memgov_pending_reviews", (("kind", "task_fact"),)) not in scraped
    assert any(name == "memgov_celery_queue_length" for name, _ in scraped)


def test_the_image_serves_worker_metrics_by_default():
    assert "MEMGOV_WORKER_METRICS_PORT=9808" in (DEPLOY / "Dockerfile").read_text()


def test_make_prod_serves_each_workers_metrics_on_its_own_port_by_default():
    # Both Celery workers of deploy/Procfile run on one machine: one port would fail the
    # second worker's listener (issue 36, point 8). Loopback only (the Makefile).
    environment = procfile_environment()
    ports = {
        role: int(environment[role]["MEMGOV_WORKER_METRICS_PORT"])
        for role, argv in procfile().items()
        if is_celery_worker(argv)
    }
    prod = (ROOT / "Makefile").read_text().split("\nprod:", 1)[1].split("\n\n", 1)[0]

    assert set(ports) == {"worker", "webhooks"}
    assert all(ports.values()) and len(set(ports.values())) == len(ports)
    assert 'MEMGOV_WORKER_METRICS_HOST="$${MEMGOV_WORKER_METRICS_HOST:-127.0.0.1}"' in prod
