"""Issue 47, point 8: a 429 of the tenant share (gateway.tenant_share), answered before the
URL is resolved, was logged under the route ``unmatched`` and without its tenant. The
production web role, one worker with two threads and a cap of one request per tenant,
under twenty requests at once from one agent: every request line, the refused ones
included, names the route and the tenant."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from django.conf import settings

from tests.conftest import World, needs
from tests.deploy.live import Gunicorn, get
from tests.integration.test_workflow_worker import _test_database_url

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]


def test_a_tenant_cap_refusal_is_logged_with_its_route_and_tenant(world: World, tmp_path: Path):
    env = {
        "DATABASE_URL": _test_database_url(),
        "REDIS_URL": str(settings.REDIS_URL),
        "CACHE_URL": str(settings.CACHE_URL),
        "CELERY_BROKER_URL": str(settings.CELERY_BROKER_URL),
        "MEMGOV_LOG_FORMAT": "json",
        "MEMGOV_WEB_THREADS": "2",
        "MEMGOV_TENANT_MAX_IN_FLIGHT": "1",
    }
    auth = {"Authorization": f"Bearer {world.keys['agent']}"}
    statuses: list[int] = []
    with Gunicorn(tmp_path / "web.log", env, "--workers=1", "--threads=2") as web:
        url = f"{web.base}/api/v1/memories"
        assert get(url, headers=auth)[0] == 200  # the process learns the key's tenant

        def ask() -> None:
            statuses.append(get(url, headers=auth)[0])

        clients = [threading.Thread(target=ask) for _ in range(20)]
        for client in clients:
            client.start()
        for client in clients:
            client.join(timeout=60)
        log = web.output()

    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    requests = [line for line in lines if line.get("event") == "request"]
    refused = [line for line in requests if line["status"] == 429]
    assert 429 in statuses, statuses
    assert len(refused) == statuses.count(429)
    tenant = str(world.tenant.pk)
    for line in refused:
        assert line["route"] == "/api/v1/memories", line
        assert line["tenant"] == tenant, line
        assert line["tenant_slug"] == world.tenant.slug, line  # a person reads the slug
    # A key this process has not seen authenticate yet counts as "unverified".
    assert [line["tenant"] for line in requests] == ["unverified"] + [tenant] * 20
    assert "tenant_slug" not in requests[0]  # no tenant known yet
