"""Liveness and readiness, at the site root (API.md, Health and schema)."""

from __future__ import annotations

import logging

from django.core.cache import cache
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from kombu.exceptions import KombuError
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)
# What a dependency that does not answer raises (a bug elsewhere is a 500, not a 503).
DEPENDENCY_DOWN: tuple[type[Exception], ...] = (DatabaseError, RedisError, KombuError, OSError)


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _database_ok() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return bool(cursor.fetchone() == (1,))


def _cache_ok() -> bool:
    cache.set("memgov:readyz", "1", timeout=5)
    return bool(cache.get("memgov:readyz") == "1")


def _broker_ok() -> bool:
    from config.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=1)
    return True


def readyz(request: HttpRequest) -> JsonResponse:
    """503 naming the first dependency that does not answer."""
    checks = {"database": _database_ok, "cache": _cache_ok, "broker": _broker_ok}
    for name, check in checks.items():
        try:
            ok = check()
        except DEPENDENCY_DOWN:
            logger.warning("readiness check %s failed", name, exc_info=True)
            ok = False
        if not ok:
            return JsonResponse({"status": "unavailable", "failing": name}, status=503)
    return JsonResponse({"status": "ok", "checked": list(checks)})
