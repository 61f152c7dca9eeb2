"""Liveness and readiness, at the site root (API.md, Health and schema)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse

logger = logging.getLogger(__name__)


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
        except Exception:
            logger.warning("readiness check %s failed", name, exc_info=settings.DEBUG)
            ok = False
        if not ok:
            return JsonResponse({"status": "unavailable", "failing": name}, status=503)
    return JsonResponse({"status": "ok", "checked": list(checks)})


def floor(request: HttpRequest) -> JsonResponse:
    """A bare JSON answer of the same server: the benchmarks' floor."""
    return JsonResponse({"status": "ok"})
