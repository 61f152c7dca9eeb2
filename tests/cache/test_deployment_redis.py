"""Every process of one deployment uses the same Redis databases (issue 33, point 2): a
process whose cache or broker names another database of the server than the one the
deployment's other processes use refuses to start, instead of serving answers that the
others have invalidated or sending tasks no worker takes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from core.deployment import check_redis_databases
from core.models import Deployment
from tests.cache.conftest import database_url, free_port
from tests.conftest import needs

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def two_databases() -> Iterator[tuple[str, str]]:
    """This test process's own cache and broker databases, without markers before or after."""
    cache, broker = str(settings.CACHE_URL), str(settings.CELERY_BROKER_URL)

    def forget() -> None:
        for url in (cache, broker):
            client = redis.Redis.from_url(url)
            for key in client.scan_iter("memgov:deployment:*"):
                client.delete(key)
            client.close()

    forget()
    yield cache, broker
    forget()


def test_a_process_whose_cache_is_another_database_than_the_deployments_refuses_to_start(
    two_databases, settings
):
    cache, broker = two_databases
    check_redis_databases()  # the web role starts first and marks its databases

    settings.CACHE_URL = broker  # a second process, told another database for its cache
    with pytest.raises(ImproperlyConfigured) as refused:
        check_redis_databases()

    own, theirs = broker.rsplit("/", 1)[1], cache.rsplit("/", 1)[1]
    assert f"CACHE_URL names Redis database {own}" in str(refused.value)
    assert f"this deployment's cache is database {theirs}" in str(refused.value)


def test_processes_with_the_same_urls_start_and_a_flushed_redis_is_marked_again(
    two_databases,
):
    cache, _ = two_databases
    check_redis_databases()
    check_redis_databases()  # a second process of the same deployment

    redis.Redis.from_url(cache).flushdb()  # a restore, or Redis restarted without its data
    check_redis_databases()

    key = Deployment.objects.get().key
    assert redis.Redis.from_url(cache).exists(f"memgov:deployment:{key}:cache")


@pytest.mark.parametrize(
    "command",
    [
        ["manage.py", "mcp"],
        ["-m", "celery", "-A", "config", "worker", "--pool=solo"],
        ["-m", "gunicorn", "config.wsgi:application", "-c", "deploy/gunicorn.conf.py"],
    ],
    ids=["stdio-mcp", "worker", "web"],
)
def test_a_process_with_another_cache_database_stops_at_start_and_says_why(two_databases, command):
    cache, broker = two_databases
    check_redis_databases()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CACHE_URL": broker,
        "CELERY_BROKER_URL": cache,  # swapped: one database for both would be refused first
        "MEMGOV_API_KEY": "mg_irrelevant_the_check_comes_first",
        "GUNICORN_BIND": f"127.0.0.1:{free_port()}",
        "GUNICORN_WORKERS": "1",
    }

    done = subprocess.run(  # noqa: S603 - the project's own command
        [sys.executable, *command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        input="",
        check=False,
    )

    assert done.returncode != 0
    assert f"this deployment's cache is database {cache.rsplit('/', 1)[1]}" in done.stderr
    assert done.stdout == ""
