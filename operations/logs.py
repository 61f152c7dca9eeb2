"""Structured logs: one JSON object per line, with the request id of the HTTP request (or
of the request that enqueued the Celery task) on every line.

Log records carry ids, routes, statuses and timings only. Nothing here logs a request
body, a query string, a header value other than the request id, or an API key."""

from __future__ import annotations

import json
import logging
import logging.config
import re
import threading
import time
import uuid
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

# The id of the request (or task) this code runs for; "-" outside of both.
request_id: ContextVar[str] = ContextVar("memgov_request_id", default="-")
task_context: ContextVar[dict[str, str] | None] = ContextVar("memgov_task", default=None)
# The tenant a request counted against (gateway.tenant_share), for its request line.
request_tenant: ContextVar[str | None] = ContextVar("memgov_request_tenant", default=None)
# …and that tenant's slug, which a person reads more easily than an id (issue 47).
request_tenant_slug: ContextVar[str | None] = ContextVar("memgov_tenant_slug", default=None)

REQUEST_ID_HEADER = "X-Request-ID"
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


def incoming_request_id(header: str | None) -> str:
    """Keep a caller's (or the proxy's) id when it is a plain token; otherwise make one,
    so a log line can never be forged or stuffed through the header."""
    if header and _SAFE_ID.fullmatch(header):
        return header
    return uuid.uuid4().hex


class RequestIdFilter(logging.Filter):
    """Stamps every record with the current request id and task (if any)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        task = task_context.get()
        if task:
            record.task_id = task["task_id"]
            record.task_name = task["task"]
        return True


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "message", "request_id", …}``; fields given as
    ``extra={"memgov": {...}}`` are added at the top level."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", "-"),
        }
        for name in ("task_id", "task_name"):
            if hasattr(record, name):
                line[name] = getattr(record, name)
        fields = getattr(record, "memgov", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, separators=(",", ":"))


class GunicornAccessFormatter(JsonFormatter):
    """gunicorn's access line (GUNICORN_ACCESS_LOG=-) as JSON with the method, the path
    without its query string, the status, the time and the request id Memgov answered
    with: not gunicorn's combined format, which carries the query string, the referrer
    and the user agent (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        atoms = record.args if isinstance(record.args, Mapping) else {}
        method, path, status = (str(atoms.get(k, "-")) for k in ("m", "U", "s"))
        record.msg, record.args = "%s %s %s", (method, path, status)
        record.request_id = str(atoms.get("{x-request-id}o", "-"))
        microseconds = str(atoms.get("D", ""))
        record.memgov = {
            "event": "access",
            "method": method,
            "path": path,
            "status": int(status) if status.isdigit() else status,
            "duration_ms": round(int(microseconds) / 1000, 2) if microseconds.isdigit() else None,
        }
        return super().format(record)


def gunicorn_logging_config(*, level: str) -> dict[str, Any]:
    """gunicorn's ``logconfig_dict`` under MEMGOV_LOG_FORMAT=json: its own lines (start,
    workers booted, timed out or exiting, shutdown) and its access log as JSON, on the
    streams gunicorn uses (error log: stderr, access log: stdout)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "operations.logs.RequestIdFilter"}},
        "formatters": {
            "json": {"()": "operations.logs.JsonFormatter"},
            "access": {"()": "operations.logs.GunicornAccessFormatter"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "filters": ["request_id"],
                "stream": "ext://sys.stdout",
            },
            "error_console": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "filters": ["request_id"],
                "stream": "ext://sys.stderr",
            },
            "access_console": {
                "class": "logging.StreamHandler",
                "formatter": "access",
                "stream": "ext://sys.stdout",
            },
        },
        "root": {"level": level, "handlers": ["console"]},
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": ["error_console"], "propagate": False},
            "gunicorn.access": {
                "level": "INFO",
                "handlers": ["access_console"],
                "propagate": False,
            },
        },
    }


class ServerErrorsOnly(logging.Filter):
    """On ``django.request``: keep 5xx (with their tracebacks), drop 4xx, which the request
    line (``memgov.request``) already records once with its status."""

    def filter(self, record: logging.LogRecord) -> bool:
        return int(getattr(record, "status_code", 500)) >= 500


# Seconds between two summaries of one kind of database outage; the setting
# MEMGOV_OUTAGE_LOG_INTERVAL_SECONDS, if any, overrides it (tests shorten it).
OUTAGE_LOG_INTERVAL_SECONDS = 10.0


class _OutageLedger:
    """What this process refused during a database outage, per kind of error (type and
    first line): when its last line was written, how many since were left out, how many
    in all. One for the whole process, so the web, the probes, the tasks and beat share
    one rate limit, and the count left out is said when the database answers again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}  # kind: when its last line was written
        self._left_out: dict[str, int] = {}  # kind: not on a line since then
        self._refused = 0  # since the outage began, on a line or not

    def note(self, kind: str, now: float, interval: float) -> int | None:
        """None: leave this one out (counted); else how many of ``kind`` were left out
        since its previous line."""
        with self._lock:
            self._refused += 1
            last = self._last.get(kind)
            if last is not None and now - last < interval:
                self._left_out[kind] = self._left_out.get(kind, 0) + 1
                return None
            self._last[kind] = now
            return self._left_out.pop(kind, 0)

    def ended(self) -> tuple[int, dict[str, int]] | None:
        """The outage's totals (all refused, left out per kind), once, or None: none."""
        with self._lock:
            if not self._refused:
                return None
            totals = (self._refused, dict(self._left_out))
            self._last.clear()
            self._left_out.clear()
            self._refused = 0
            return totals


OUTAGES = _OutageLedger()


class DatabaseOutageSummary(logging.Filter):
    """A record whose error is the database not answering (refused, timed out, dropped:
    an outage; a 503 in agent_interface.problems) becomes one WARNING line with the error's first
    line and no traceback, at most one per kind of error every
    ``OUTAGE_LOG_INTERVAL_SECONDS`` in the process; the next one says how many were left
    out, and so does a last line when the database answers again (``database_answered``).
    On ``django.request`` and on the console handler, so the probes, the tasks and beat
    are summarised as the requests are. A traceback per request filled 21 MB in 75 s
    (issue 47)."""

    def filter(self, record: logging.LogRecord) -> bool:
        decided = getattr(record, "memgov_outage_shown", None)
        if decided is not None:  # another handler's filter counted it already
            return bool(decided)
        error = _database_outage(record)
        if error is None:
            return True
        summary = (str(error).strip().splitlines() or [""])[0][:200]
        kind = f"{type(error).__name__}: {summary}"
        left_out = OUTAGES.note(kind, time.monotonic(), _outage_interval())
        record.memgov_outage_shown = left_out is not None
        if left_out is None:
            return False
        where = _where(record)
        record.msg = "database unavailable (%s): %s: %s"
        record.args = (where, type(error).__name__, summary)
        if left_out:
            record.msg += "; %d more like it since the previous line not logged"
            record.args = (*record.args, left_out)
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def _where(record: logging.LogRecord) -> str:
    """What was refused: a request's status and path, a task, or the record's message."""
    if record.name == "django.request":
        return f"503 {getattr(getattr(record, 'request', None), 'path', '-')}"
    if record.name == "celery.app.trace" and isinstance(record.args, Mapping):
        return f"task {record.args.get('name', '?')}[{record.args.get('id', '?')}]"
    return (record.getMessage().splitlines() or [""])[0][:120]


def _database_outage(record: logging.LogRecord) -> BaseException | None:
    """The OperationalError / InterfaceError of a database that did not answer, if that
    is this record's error. A request's 503 is one whatever it says (agent_interface.problems);
    elsewhere only the connection's errors (no SQLSTATE, class 08, an administrator's
    shutdown, a cancelled statement), so a deadlock keeps its traceback."""
    from django.db import InterfaceError, OperationalError  # noqa: PLC0415 - logs load first

    if not record.exc_info or not isinstance(record.exc_info[1], OperationalError | InterfaceError):
        return None
    error = record.exc_info[1]
    if record.name == "django.request":
        return error if int(getattr(record, "status_code", 0)) == 503 else None
    sqlstate = getattr(error.__cause__, "sqlstate", None)
    if sqlstate is None or sqlstate.startswith("08") or sqlstate in _OUTAGE_SQLSTATES:
        return error
    return None


# admin_shutdown, crash_shutdown, cannot_connect_now, query_canceled (statement_timeout)
_OUTAGE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "57014"})


def database_answered(**_: Any) -> None:
    """``connection_created``: the database answers again; if this process refused anything
    meanwhile, one line says how much, and what was never on a line."""
    totals = OUTAGES.ended()
    if totals is None:
        return
    refused, left_out = totals
    message = "database answers again; %d requests refused meanwhile"
    args: tuple[Any, ...] = (refused,)
    if left_out:
        message += " (%d not logged: %s)"
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(left_out.items()))
        args = (*args, sum(left_out.values()), kinds)
    logging.getLogger("operations.logs").warning(message, *args)


def _outage_interval() -> float:
    from django.conf import settings  # noqa: PLC0415 - logs load before settings

    return float(
        getattr(settings, "MEMGOV_OUTAGE_LOG_INTERVAL_SECONDS", OUTAGE_LOG_INTERVAL_SECONDS)
    )


def configure(config: dict[str, Any]) -> None:
    """Django's LOGGING_CONFIG (and the Celery processes'): the LOGGING dict, with Python's
    warnings going through it too, so that they are JSON lines as well, not plain text
    on stderr; and a line when the database answers again after refusals."""
    from django.db.backends.signals import connection_created  # noqa: PLC0415 - logs load first

    logging.config.dictConfig(config)
    logging.captureWarnings(True)
    connection_created.connect(database_answered, dispatch_uid="operations.logs.database_answered")


def logging_config(*, json_lines: bool, level: str) -> dict[str, Any]:
    """The LOGGING dict: JSON lines in production (MEMGOV_LOG_FORMAT=json), plain text
    for a person at a terminal."""
    plain = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_id": {"()": "operations.logs.RequestIdFilter"},
            "server_errors_only": {"()": "operations.logs.ServerErrorsOnly"},
            "database_outage_summary": {"()": "operations.logs.DatabaseOutageSummary"},
        },
        "formatters": {
            "json": {"()": "operations.logs.JsonFormatter"},
            "plain": {"format": plain},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json" if json_lines else "plain",
                "filters": ["request_id", "database_outage_summary"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "django.db.backends": {"level": "WARNING"},
            "django.request": {"filters": ["server_errors_only", "database_outage_summary"]},
        },
    }
