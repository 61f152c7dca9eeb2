"""Per-request and per-task telemetry: a request id, one JSON log line, latency metrics.

The request id comes from ``X-Request-ID`` (a proxy's or the caller's) or is made here,
is echoed in the response, and travels in the headers of every Celery task the request
enqueues, so the worker's lines for that task carry it too."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from celery import __version__ as celery_version
from celery import signals
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve

import operations.logs as logs
from core import metrics
from operations.metrics import SENT_AT_HEADER, serve_worker_metrics

REQUEST_ID_TASK_HEADER = "memgov_request_id"
request_logger = logging.getLogger("memgov.request")
task_logger = logging.getLogger("memgov.task")


def _route(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        # Answered before the URL was resolved (the tenant share's 429, the input
        # boundary's refusals): the route it would have had, not "unmatched".
        try:
            match = resolve(request.path_info, getattr(request, "urlconf", None))
        except Resolver404:
            return "unmatched"
    return f"/{match.route}" if match.route else "unmatched"


def request_finished(
    method: str,
    route: str,
    status: int,
    elapsed: float,
    tenant: str | None = None,
    tenant_slug: str | None = None,
) -> None:
    """The latency sample and the one JSON line of a finished request, whichever
    application served it (Django's middleware below, the ASGI wrapper of ``/mcp``);
    the line names the tenant the request counted against, when it did."""
    metrics.REQUEST_LATENCY.labels(route, method, status).observe(elapsed)
    fields: dict[str, Any] = {
        "event": "request",
        "method": method,
        "route": route,
        "status": status,
        "duration_ms": round(elapsed * 1000, 2),
    }
    if tenant is not None:
        fields["tenant"] = tenant
    if tenant_slug is not None:
        fields["tenant_slug"] = tenant_slug
    request_logger.info("%s %s %s", method, route, status, extra={"memgov": fields})


class RequestTelemetryMiddleware:
    """Outermost after the health shortcut: times the whole request, logs one line."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        rid = logs.incoming_request_id(request.headers.get(logs.REQUEST_ID_HEADER))
        token = logs.request_id.set(rid)
        tenant_token = logs.request_tenant.set(None)
        slug_token = logs.request_tenant_slug.set(None)
        started = time.perf_counter()
        metrics.REQUESTS_IN_FLIGHT.inc()
        try:
            response = self.get_response(request)
            response[logs.REQUEST_ID_HEADER] = rid
            method = request.method or "GET"
            elapsed = time.perf_counter() - started
            tenant, slug = logs.request_tenant.get(), logs.request_tenant_slug.get()
            request_finished(method, _route(request), response.status_code, elapsed, tenant, slug)
            return response
        finally:
            metrics.REQUESTS_IN_FLIGHT.dec()
            logs.request_tenant_slug.reset(slug_token)
            logs.request_tenant.reset(tenant_token)
            logs.request_id.reset(token)


class AsgiRequestTelemetry:
    """The same for requests that never reach Django (the MCP server at ``/mcp``): the
    request id taken or made and echoed, one JSON line and a latency sample under one
    fixed route. A stream held open is one request, timed until it closes."""

    def __init__(self, app: Any, route: str) -> None:
        self.app = app
        self.route = route

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = logs.REQUEST_ID_HEADER.lower().encode("latin-1")
        given = dict(scope.get("headers") or []).get(header)
        rid = logs.incoming_request_id(given.decode("latin-1") if given else None)
        token = logs.request_id.set(rid)
        started = time.perf_counter()
        status = 500  # what the client sees when the app fails before answering

        async def answer(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [*message.get("headers", []), (header, rid.encode("latin-1"))]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, answer)
        finally:
            method = str(scope.get("method", "GET"))
            request_finished(method, self.route, status, time.perf_counter() - started)
            logs.request_id.reset(token)


@signals.before_task_publish.connect
def _stamp_task(headers: dict[str, Any] | None = None, **_: Any) -> None:
    if headers is not None:
        headers[REQUEST_ID_TASK_HEADER] = logs.request_id.get()
        headers[SENT_AT_HEADER] = time.time()


_started: dict[str, tuple[float, Any, Any]] = {}


def _header(request: Any, name: str) -> Any:
    """A custom message header: an attribute of the worker's task request, or in its
    ``headers`` when the task was applied with them."""
    value = getattr(request, name, None)
    if value is None:
        value = (getattr(request, "headers", None) or {}).get(name)
    return value


@signals.task_prerun.connect
def _task_started(task_id: str = "", task: Any = None, **_: Any) -> None:
    request = getattr(task, "request", None)
    rid = _header(request, REQUEST_ID_TASK_HEADER) or logs.request_id.get()
    sent_at = _header(request, SENT_AT_HEADER)
    name = str(getattr(task, "name", "?"))
    if sent_at is not None:
        metrics.TASK_LAG.labels(name).observe(max(0.0, time.time() - float(sent_at)))
    tokens = (
        logs.request_id.set(str(rid)),
        logs.task_context.set({"task_id": task_id, "task": name}),
    )
    _started[task_id] = (time.perf_counter(), *tokens)


@signals.task_postrun.connect
def _task_finished(task_id: str = "", task: Any = None, state: str | None = None, **_: Any) -> None:
    started = _started.pop(task_id, None)
    if started is None:
        return
    began, rid_token, task_token = started
    elapsed = time.perf_counter() - began
    name = str(getattr(task, "name", "?"))
    metrics.TASK_DURATION.labels(name, state or "UNKNOWN").observe(elapsed)
    task_logger.info(
        "%s %s",
        name,
        state,
        extra={
            "memgov": {
                "event": "task",
                "task": name,
                "task_id": task_id,
                "state": state,
                "duration_ms": round(elapsed * 1000, 2),
            }
        },
    )
    logs.task_context.reset(task_token)
    logs.request_id.reset(rid_token)


@signals.setup_logging.connect
def _django_logging(**_: Any) -> None:
    """The worker and beat log through the LOGGING setting (JSON lines in production)
    instead of Celery's own format."""
    logs.configure(settings.LOGGING)


@signals.celeryd_init.connect
def _json_worker_start(instance: Any, **_: Any) -> None:
    """Under MEMGOV_LOG_FORMAT=json: no banner (plain text on stdout; the worker's start
    line below says the same), and JSON from here on, before Celery's first warnings."""
    if settings.LOG_JSON:
        instance.quiet = True
        logs.configure(settings.LOGGING)


@signals.celeryd_after_setup.connect
def _worker_start_line(sender: str, instance: Any, **_: Any) -> None:
    """The banner's facts as one line: node, broker (password masked), pool, queues."""
    queues = sorted(instance.app.amqp.queues.consume_from or instance.app.amqp.queues)
    task_logger.info(
        "%s starting: celery %s, concurrency %s, queues %s",
        sender,
        celery_version,
        instance.concurrency,
        ",".join(queues),
        extra={
            "memgov": {
                "event": "worker_start",
                "node": sender,
                "broker": instance.app.connection_for_read().as_uri(),
                "concurrency": instance.concurrency,
                "queues": queues,
            }
        },
    )


@signals.worker_shutting_down.connect
def _worker_stop_line(sender: str, how: str, **_: Any) -> None:
    """Celery's own notice of this ("worker: Warm shutdown (MainProcess)") is printed by
    its signal handler straight to the terminal, outside logging: this is its JSON line."""
    task_logger.info(
        "%s: %s shutdown",
        sender,
        how.lower(),
        extra={"memgov": {"event": "worker_stop", "node": sender, "how": how.lower()}},
    )


@signals.beat_init.connect
def _beat_start_line(sender: Any, **_: Any) -> None:
    """beat prints its banner unless started with ``celery --quiet``, as deploy/ does under
    JSON logs; this line says what it said."""
    scheduler = sender.scheduler
    task_logger.info(
        "beat starting: %s, broker %s",
        type(scheduler).__name__,
        sender.app.connection_for_write().as_uri(),
        extra={"memgov": {"event": "beat_start", "scheduler": type(scheduler).__name__}},
    )


@signals.worker_init.connect
def _worker_metrics(**_: Any) -> None:
    """Metrics are no reason to stop running tasks: a taken port is logged, not fatal."""
    port: int = settings.MEMGOV_WORKER_METRICS_PORT
    if port:
        try:
            host, bound = serve_worker_metrics(port, settings.MEMGOV_WORKER_METRICS_HOST)
        except OSError as error:
            task_logger.error("worker metrics off: port %s: %s", port, error)
            return
        task_logger.info("worker metrics on %s:%s/metrics", host, bound)
