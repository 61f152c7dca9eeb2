"""The production web role (gunicorn's uvicorn workers on ``config.asgi``) runs each
request's sync code in a thread of its own. With persistent connections every such thread
kept one, and PostgreSQL refused new ones within a minute of the soak (bench/soak.py):
``config/asgi.py`` takes them from psycopg's pool instead (``MEMGOV_DB_POOL``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from tests.cache.conftest import ASGI_WORKERS, Gunicorn, RedisServer
from tests.conftest import needs

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]

POOL_SIZE = 4


@pytest.fixture
def asgi_server(redis_server: RedisServer, django_db_setup: Any) -> Iterator[Gunicorn]:
    server = Gunicorn(
        redis_server.url,
        app="config.asgi:application",
        GUNICORN_CMD_ARGS=ASGI_WORKERS,
        MEMGOV_DB_POOL_SIZE=str(POOL_SIZE),
    )
    yield server
    server.stop()


def _connections_to_this_database() -> int:
    name = connection.settings_dict["NAME"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [name])
        return int(cursor.fetchone()[0])


def test_four_hundred_requests_in_their_own_threads_use_no_more_than_the_pools(asgi_server, world):
    before = _connections_to_this_database()
    statuses: list[int] = []

    def client() -> None:
        for _ in range(50):
            statuses.append(asgi_server.call("GET", "/api/v1/policy", world.keys["agent"])[0])

    clients = [threading.Thread(target=client) for _ in range(8)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    after = _connections_to_this_database()

    assert statuses == [200] * 400
    assert after - before <= 2 * POOL_SIZE  # two worker processes, one pool each
