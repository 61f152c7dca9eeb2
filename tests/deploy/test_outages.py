"""Issue 36, points 3-5: gunicorn as deployed, with its database cut behind a relay or its
Redis gone. Liveness answers at once while every request thread waits on the database,
readiness answers within its timeout and follows what the pod can serve, and an API call
during a database outage is a quick 503 with ``Retry-After``, not a 500 after 10 s."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
from django.conf import settings

from tests.conftest import World, needs
from tests.deploy.live import Gunicorn, Relay, free_port, get, timed_get
from tests.integration.test_workflow_worker import _test_database_url

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]


@pytest.fixture
def relay() -> Iterator[Relay]:
    target = urlsplit(_test_database_url())
    relay = Relay((target.hostname or "127.0.0.1", target.port or 5432))
    yield relay
    relay.close()


def _env(relay: Relay, **more: str) -> dict[str, str]:
    return {
        "DATABASE_URL": relay.url(_test_database_url()),
        "REDIS_URL": str(settings.REDIS_URL),
        "CACHE_URL": str(settings.CACHE_URL),
        "CELERY_BROKER_URL": str(settings.CELERY_BROKER_URL),
        **more,
    }


def test_liveness_answers_at_once_while_every_request_thread_waits_on_the_database(
    world: World, relay: Relay, tmp_path: Path
):
    # One worker with two request threads, and a database that takes 10 s to give up on.
    env = _env(relay, MEMGOV_DB_CONNECT_TIMEOUT="10", MEMGOV_READY_TIMEOUT_SECONDS="2")
    with Gunicorn(tmp_path / "web.log", env, "--workers=1", "--threads=2") as web:
        sources = f"{web.base}/api/v1/memories"
        auth = {"Authorization": f"Bearer {world.keys['agent']}"}
        assert get(sources, headers=auth)[0] == 200
        relay.cut()
        # Six calls hold both threads and queue four more behind them.
        callers = [
            threading.Thread(target=get, args=(sources,), kwargs={"headers": auth}, daemon=True)
            for _ in range(6)
        ]
        for caller in callers:
            caller.start()
        public: dict[str, float] = {}
        waiting = threading.Thread(
            target=lambda: public.update(took=timed_get(f"{web.base}/healthz", 90)[0])
        )
        threading.Event().wait(1.0)
        waiting.start()
        threading.Event().wait(1.0)

        took, status, body = timed_get(f"{web.probes}/healthz", timeout=5)
        ready_took, ready_status, ready_body = timed_get(f"{web.probes}/readyz", timeout=5)

        assert (status, json.loads(body)) == (200, {"status": "ok"})
        assert took < 0.5, took
        # Readiness gives up on the database within its timeout (2 s), before the probe's.
        assert ready_status == 503
        assert json.loads(ready_body)["status"] == "unavailable"
        assert ready_took < 3.0, ready_took
        # The web port's /healthz waited behind the requests: what the kubelet used to see.
        waiting.join(90)
        assert public["took"] > 3.0, public
        relay.mend()


def test_an_api_call_during_a_database_outage_is_a_quick_503_with_retry_after(
    world: World, relay: Relay, tmp_path: Path
):
    env = _env(relay, MEMGOV_DB_CONNECT_TIMEOUT="2")
    with Gunicorn(tmp_path / "web.log", env, "--workers=1") as web:
        sources = f"{web.base}/api/v1/memories"
        auth = {"Authorization": f"Bearer {world.keys['agent']}"}
        assert get(sources, headers=auth)[0] == 200
        relay.cut()

        took, status, body = timed_get(sources, headers=auth)
        _, _, headers = get(sources, headers=auth)

        assert status == 503, body
        problem = json.loads(body)
        assert problem["status"] == 503
        assert problem["title"] == "Service Unavailable"
        assert headers["Content-Type"] == "application/problem+json"
        assert headers["Retry-After"] == "5"
        assert took < 4.0, took  # the connect timeout (2 s), not the kernel's

        relay.mend()
        assert get(sources, headers=auth)[0] == 200  # back once the database is


def test_readiness_stays_ready_but_degraded_while_redis_is_down(
    world: World, relay: Relay, tmp_path: Path
):
    nowhere = f"redis://127.0.0.1:{free_port()}"
    env = _env(relay, REDIS_URL=nowhere, CACHE_URL=f"{nowhere}/1", CELERY_BROKER_URL=f"{nowhere}/2")
    with Gunicorn(tmp_path / "web.log", env, "--workers=1") as web:
        took, status, body = timed_get(f"{web.probes}/readyz", timeout=5)

        # Resolves read the database and writes wait in the outbox: the pod stays in the
        # Service (tests/cache shows resolves answering with Redis down).
        assert (status, json.loads(body)) == (
            200,
            {
                "status": "degraded",
                "checked": ["database", "cache", "broker"],
                "degraded": ["cache", "broker"],
                "semantic": "off",
            },
        )
        assert took < 2.5, took
        relay.cut()
        assert get(f"{web.probes}/readyz", timeout=5)[0] == 503  # without the database: out


def _redis_client_ids(url: str) -> set[int]:
    """Ids of the connections open on the URL's database (other databases are others')."""
    number = int(urlsplit(url).path.strip("/") or 0)
    client = redis.Redis.from_url(url)
    try:
        own = client.client_id()
        return {
            int(c["id"])
            for c in client.client_list()
            if int(c["db"]) == number and int(c["id"]) != own
        }
    finally:
        client.close()


def test_readiness_reuses_its_redis_connections_from_probe_to_probe(
    world: World, relay: Relay, tmp_path: Path
):
    with Gunicorn(tmp_path / "web.log", _env(relay), "--workers=1") as web:
        assert get(f"{web.probes}/readyz")[0] == 200
        urls = (str(settings.CACHE_URL), str(settings.CELERY_BROKER_URL))
        before = set().union(*map(_redis_client_ids, urls))

        answers = [get(f"{web.probes}/readyz")[0] for _ in range(30)]

        after = set().union(*map(_redis_client_ids, urls))
        assert answers == [200] * 30
        assert after - before == set()  # no probe opened a connection of its own


def test_the_probe_port_answers_nothing_but_the_two_probes(world: World, relay, tmp_path: Path):
    with Gunicorn(tmp_path / "web.log", _env(relay), "--workers=1") as web:
        assert get(f"{web.probes}/api/v1/memories")[0] == 404
        assert get(f"{web.probes}/metrics")[0] == 404
