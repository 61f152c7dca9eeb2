"""Liveness and readiness (docs/api.md, Health and schema; docs/operations.md).

Liveness says the process answers. Readiness says what the pod can serve: nothing without
the database (503), everything but fresh cache hits and prompt task pick-up without Redis
(200, ``degraded``: resolves read the database when the cache is down, and every write
waits in the outbox until the broker is back). Taking every pod out of the Service when
Redis is down would turn a slower site into no site.

Under gunicorn both are also served on their own port (operations.probes), by a thread of each
worker that never waits behind the request threads; the deployed probes call that port,
which no Service or Ingress exposes."""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import DisallowedHost
from django.db import DatabaseError, close_old_connections, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from kombu.exceptions import KombuError
from redis import Redis
from redis.exceptions import RedisError

from agent_interface.problems import problem_response
from core import redis_client

logger = logging.getLogger(__name__)
# What a dependency that does not answer raises (a bug elsewhere is a 500, not a 503).
DEPENDENCY_DOWN: tuple[type[Exception], ...] = (DatabaseError, RedisError, KombuError, OSError)
# Without these the pod serves nothing; without the others it serves, degraded.
REQUIRED = frozenset({"database"})
# A request that came through a proxy (the Ingress adds this) is not a probe: /readyz on
# the public port answers it 404, so readiness is not public.
FORWARDED_HEADER = "X-Forwarded-For"


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _database_ok() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return bool(cursor.fetchone() == (1,))


def _cache_ok() -> bool:
    if not settings.CACHE_URL:  # the local-memory cache of `make run` is always there
        cache.set("memgov:readyz", "1", timeout=5)
        return bool(cache.get("memgov:readyz") == "1")
    # The resolve cache's own pooled client: no new connection per probe.
    return bool(redis_client.redis_client().ping())


_broker_clients: dict[str, Redis] = {}


def _broker_ok() -> bool:
    url = str(settings.CELERY_BROKER_URL)
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return True  # the filesystem broker of `make run` lives on this disk
    client = _broker_clients.get(url)
    if client is None:  # one pooled client per process, not a connection per probe
        client = Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        _broker_clients[url] = client
    return bool(client.ping())


def _answers(name: str, check: Callable[[], bool]) -> bool:
    try:
        return check()
    except DatabaseError:
        # The console's DatabaseOutageSummary makes an outage's one line of this.
        logger.warning("readiness check %s failed", name, exc_info=True)
        return False
    except DEPENDENCY_DOWN as exc:  # Redis: one line a probe, no traceback (issue 47)
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        logger.warning("readiness check %s failed: %s: %s", name, type(exc).__name__, first)
        return False


def check_dependencies() -> tuple[int, dict[str, Any]]:
    """Every check, in this thread: (status, body)."""
    # Looked up at call time, so each check can be replaced on its own.
    checks = {"database": _database_ok, "cache": _cache_ok, "broker": _broker_ok}
    close_old_connections()  # a connection broken by an outage is replaced, not reused
    try:
        down = [name for name, check in checks.items() if not _answers(name, check)]
        # Search by meaning, or lexical only (no model or no vector store): not a failure.
        meaning = {"semantic": "off" if "database" in down else _semantic_state()}
    finally:
        # A fresh connection per probe (what a request thread makes after an outage), and
        # none left open in the probe's thread between probes.
        connection.close()
    required = [name for name in down if name in REQUIRED]
    if required:
        return 503, {"status": "unavailable", "failing": required[0]}
    if down:
        return 200, {"status": "degraded", "checked": list(checks), "degraded": down, **meaning}
    return 200, {"status": "ok", "checked": list(checks), **meaning}


def _semantic_state() -> str:
    # Imported here: memory's models load after the app registry.
    from memory import semantic  # noqa: PLC0415

    try:
        return semantic.state()
    except DatabaseError:
        return "off"


_checker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="readyz")
_running: concurrent.futures.Future[tuple[int, dict[str, Any]]] | None = None
_running_lock = threading.Lock()


def readiness() -> tuple[int, dict[str, Any]]:
    """The checks' answer within MEMGOV_READY_TIMEOUT_SECONDS, whatever a dependency does.

    One thread runs the checks; callers that come while it runs share its answer (probes
    never pile up connections). A check still running at the deadline is a 503 naming
    ``timeout``: the probe gets an answer before its own timeout and the pod leaves the
    Service, as it should when the database takes that long."""
    global _running
    with _running_lock:
        if _running is None or _running.done():
            _running = _checker.submit(check_dependencies)
        running = _running
    try:
        return running.result(timeout=settings.MEMGOV_READY_TIMEOUT_SECONDS)
    except concurrent.futures.TimeoutError:
        return 503, {"status": "unavailable", "failing": "timeout"}


def readyz(request: HttpRequest) -> HttpResponse:
    """200 (ok or degraded) or 503 naming what the pod cannot serve without."""
    if FORWARDED_HEADER in request.headers:
        return HttpResponse(status=404)
    status, body = readiness()
    return JsonResponse(body, status=status)


class HostAgnosticHealthMiddleware:
    """Answer ``/healthz`` and ``/readyz`` before anything reads the ``Host`` header.

    Kubernetes probes and Docker's HEALTHCHECK call the pod or container by its IP, which
    is not (and should not be) in ``ALLOWED_HOSTS``; Django would answer 400
    (DisallowedHost) and the orchestrator would restart a healthy process in a loop. Only
    these exact paths skip the host check: the health paths take no input and reveal
    nothing but up or down, and ``/metrics`` needs its bearer token (operations.metrics).
    Put this first in ``MIDDLEWARE``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        # Imported here: metrics reads models; middleware loads before the app registry.
        from operations.metrics import metrics_view  # noqa: PLC0415

        self.views: dict[str, Callable[[HttpRequest], HttpResponse]] = {
            "/healthz": healthz,
            "/readyz": readyz,
            # Prometheus scrapes pods by IP too; the bearer token guards it instead.
            "/metrics": metrics_view,
        }

    def __call__(self, request: HttpRequest) -> HttpResponse:
        view = self.views.get(request.path_info)
        if view is None:
            return self.get_response(request)
        if request.method in ("GET", "HEAD"):
            return view(request)
        try:
            request.get_host()  # only probes are answered whatever the host
        except DisallowedHost:
            return self.get_response(request)
        # A problem, not the CSRF check's page further down: these paths only answer reads.
        refused = problem_response(405, f"{request.path_info} answers GET and HEAD only.")
        refused["Allow"] = "GET, HEAD"
        return refused
