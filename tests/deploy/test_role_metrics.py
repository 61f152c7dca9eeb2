"""Issue 47, point 6: what the role and database alerts read. ``/metrics`` says whether
PostgreSQL answered the scrape (a web pod out of the Service is still scraped, so this is
the database itself, not the 5xx it causes) and whether a beat holds the lease."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import needs
from tests.deploy.live import Gunicorn, Relay, get, wait_for
from tests.deploy.test_beat import Beat, broker  # noqa: F401 - the fixture
from tests.deploy.test_metrics import TOKEN, sample, scraper  # noqa: F401 - the fixture
from tests.integration.test_workflow_worker import _test_database_url

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]


@pytest.fixture
def relay() -> Iterator[Relay]:
    target = urlsplit(_test_database_url())
    relay = Relay((target.hostname or "127.0.0.1", target.port or 5432))
    yield relay
    relay.close()


def _scrape(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, body, _ = get(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200, body
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def test_a_scrape_says_the_database_is_down_while_it_is_cut_and_up_when_back(
    relay: Relay, tmp_path: Path
):
    env = {
        "DATABASE_URL": relay.url(_test_database_url()),
        "REDIS_URL": str(settings.REDIS_URL),
        "CACHE_URL": str(settings.CACHE_URL),
        "CELERY_BROKER_URL": str(settings.CELERY_BROKER_URL),
        "MEMGOV_DB_CONNECT_TIMEOUT": "2",
        "MEMGOV_METRICS_TOKEN": TOKEN,
    }
    with Gunicorn(tmp_path / "web.log", env, "--workers=1") as web:
        assert _scrape(web.base)[("memgov_database_up", ())] == 1

        relay.cut()
        scraped = _scrape(web.base)

        assert scraped[("memgov_database_up", ())] == 0
        assert ("memgov_celery_queue_length", (("queue", "celery"),)) in scraped
        relay.mend()
        wait_for("the database", lambda: _scrape(web.base)[("memgov_database_up", ())] == 1)


def test_the_beat_leader_gauge_follows_the_lease(broker, scraper, tmp_path):  # noqa: F811
    assert sample(scraper(), "memgov_beat_leader") == 0  # no beat runs
    beat = Beat(tmp_path / "beat")
    try:
        wait_for("the beat to lead", lambda: beat.says("takes the lease"), timeout=60)

        assert sample(scraper(), "memgov_beat_leader") == 1
    finally:
        beat.stop()  # releases the lease on the way out
    assert sample(scraper(), "memgov_beat_leader") == 0
