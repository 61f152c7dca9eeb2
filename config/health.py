"""Liveness and readiness, at the site root (docs/api.md, Health and schema)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.core.cache import cache
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
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
    # Imported here: the Celery app imports this module's siblings at start.
    from config.celery import app  # noqa: PLC0415

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


class HostAgnosticHealthMiddleware:
    """Answer ``/healthz`` and ``/readyz`` before anything reads the ``Host`` header.

    Kubernetes probes and Docker's HEALTHCHECK call the pod or container by its IP, which
    is not (and should not be) in ``ALLOWED_HOSTS``; Django would answer 400
    (DisallowedHost) and the orchestrator would restart a healthy process in a loop. Only
    these exact paths skip the host check: the health paths take no input and reveal
    nothing but up or down, and ``/metrics`` needs its bearer token (config.metrics).
    Put this first in ``MIDDLEWARE``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        # Imported here: metrics reads models; middleware loads before the app registry.
        from config.metrics import metrics_view  # noqa: PLC0415

        self.views: dict[str, Callable[[HttpRequest], HttpResponse]] = {
            "/healthz": healthz,
            "/readyz": readyz,
            # Prometheus scrapes pods by IP too; the bearer token guards it instead.
            "/metrics": metrics_view,
        }

    def __call__(self, request: HttpRequest) -> HttpResponse:
        view = self.views.get(request.path_info)
        if view is not None and request.method in ("GET", "HEAD"):
            return view(request)
        return self.get_response(request)
