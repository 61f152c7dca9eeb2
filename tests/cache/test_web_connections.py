"""The production web role (gunicorn's gthread workers on ``config.wsgi``) keeps one
persistent PostgreSQL connection per request thread (``CONN_MAX_AGE``): however many
requests come, a server holds at most workers x ``MEMGOV_WEB_THREADS`` connections, instead
of piling them up until PostgreSQL refuses more (as a thread per request once did)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from tests.cache.conftest import Gunicorn, RedisServer
from tests.conftest import needs

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]

THREADS = 4


@pytest.fixture
def web_server(redis_server: RedisServer, django_db_setup: Any) -> Iterator[Gunicorn]:
    # One tenant fills every thread on purpose: its cap (gateway.tenant_share) is off.
    server = Gunicorn(
        redis_server.url, MEMGOV_WEB_THREADS=str(THREADS), MEMGOV_TENANT_MAX_IN_FLIGHT="0"
    )
    yield server
    server.stop()


def _connections_to_this_database() -> int:
    name = connection.settings_dict["NAME"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [name])
        return int(cursor.fetchone()[0])


def test_four_hundred_requests_use_no_more_connections_than_request_threads(web_server, world):
    before = _connections_to_this_database()
    statuses: list[int] = []

    def client() -> None:
        for _ in range(50):
            statuses.append(web_server.call("GET", "/api/v1/policy", world.keys["agent"])[0])

    clients = [threading.Thread(target=client) for _ in range(8)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    after = _connections_to_this_database()

    assert statuses == [200] * 400
    assert after - before <= 2 * THREADS  # two worker processes, one per request thread
