"""Every process of one deployment must use the same Redis databases: a process whose cache
is another database never sees the others' invalidations (it keeps answering with a
retired fact), and one whose broker is another database sends tasks no worker takes.

Each process checks this when it starts (web, worker, beat, the stdio MCP server). The
deployment is its database: its one ``Deployment`` row (made by the first process) gives it
an id. Each Redis
database in use carries a marker with that id; a process that finds its deployment's
marker on another database of the same server than the one its URL names refuses to
start, naming both. A flushed or new Redis has no marker anywhere, and the first process
marks it. An unreachable database or Redis is not this check's business: it logs and lets
the process start (resolve reads the database when Redis is down)."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection

from core.models import Deployment

logger = logging.getLogger(__name__)

ROLES = {"cache": "CACHE_URL", "broker": "CELERY_BROKER_URL"}


def redis_urls() -> dict[str, str]:
    """The Redis database this process uses for each role, by role."""
    urls = {"cache": str(settings.CACHE_URL), "broker": str(settings.CELERY_BROKER_URL)}
    return {role: url for role, url in urls.items() if urlsplit(url).scheme in ("redis", "rediss")}


def check_redis_databases() -> None:
    """Refuse to start when this process's cache or broker is not its deployment's."""
    urls = redis_urls()
    if not urls:
        return
    try:
        deployment = str(Deployment.objects.get_or_create(pk=1)[0].key)
    except DatabaseError as exc:
        logger.warning("deployment check skipped: no deployment id (%s)", exc)
        return
    finally:
        connection.close()
    for role, url in urls.items():
        try:
            _check(role, url, f"memgov:deployment:{deployment}:{role}")
        except redis.RedisError as exc:
            logger.warning("deployment check of the %s skipped: %s", role, exc)


def _check(role: str, url: str, marker: str) -> None:
    own = _database_number(url)
    client = _client(url, own)
    try:
        if client.exists(marker):
            return
        elsewhere = [db for db in _other_databases(client, own) if _marked(url, db, marker)]
        if elsewhere:
            raise ImproperlyConfigured(
                f"{ROLES[role]} names Redis database {own}, but this deployment's {role} is "
                f"database {elsewhere[0]} of that server (other processes use it). Give every "
                f"process the same {ROLES[role]} (or REDIS_URL). If the deployment moved on "
                f"purpose, stop the old processes and delete the key {marker} there."
            )
        client.set(marker, "1")
    finally:
        client.close()


def _other_databases(client: redis.Redis, own: int) -> list[int]:
    try:
        count = int(client.config_get("databases").get("databases") or 16)
    except redis.ResponseError:  # CONFIG is often disabled on managed Redis
        count = 16
    return [db for db in range(count) if db != own]


def _database_number(url: str) -> int:
    path = urlsplit(url).path.strip("/")
    return int(path) if path.isdigit() else 0


def _client(url: str, db: int) -> redis.Redis:
    """A client of database ``db`` of the URL's server (a URL's own number wins over a
    ``db`` argument in redis-py, so the path is rewritten)."""
    return redis.Redis.from_url(
        urlsplit(url)._replace(path=f"/{db}").geturl(), socket_connect_timeout=2, socket_timeout=2
    )


def _marked(url: str, db: int, marker: str) -> bool:
    other = _client(url, db)
    try:
        return bool(other.exists(marker))
    finally:
        other.close()
