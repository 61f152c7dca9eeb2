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

import orjson

# The id of the request (or task) this code runs for; "-" outside of both.
request_id: ContextVar[str] = ContextVar("memgov_request_id", default="-")
task_context: ContextVar[dict[str, str] | None] = ContextVar("memgov_task", default=None)
# The tenant a request counted against (config.tenant_share), for its request line.
request_tenant: ContextVar[str | None] = ContextVar("memgov_request_tenant", default=None)

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
        return json_line(line)


# Datetimes and dataclasses go through ``str`` as they did with ``json``, not orjson's own
# forms, so a field keeps its shape in the log.
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def json_line(line: Mapping[str, Any]) -> str:
    """One log line's JSON: orjson, a few times faster than ``json`` on every request line;
    ``json`` for what orjson refuses (a lone surrogate, a key that is not a string, an
    integer beyond 64 bits), so that a line is never lost."""
    try:
        return orjson.dumps(line, default=str, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError:
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
        "filters": {"request_id": {"()": "config.logs.RequestIdFilter"}},
        "formatters": {
            "json": {"()": "config.logs.JsonFormatter"},
            "access": {"()": "config.logs.GunicornAccessFormatter"},
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


class DatabaseOutageSummary(logging.Filter):
    """On ``django.request``: a 503 for a database that did not answer (an outage,
    config.problems) is one WARNING line with the error's first line, no traceback, and at
    most one line per kind every ``OUTAGE_LOG_INTERVAL_SECONDS``; the next line says how
    many were left out. A traceback per request filled 21 MB in 75 s (issue 47)."""

    def __init__(self, name: str = "") -> None:
        super().__init__(name)
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}  # kind: when its last line was written
        self._suppressed: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        error = _database_outage(record)
        if error is None:
            return True
        kind = type(error).__name__
        now = time.monotonic()
        interval = _outage_interval()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < interval:
                self._suppressed[kind] = self._suppressed.get(kind, 0) + 1
                return False
            self._last[kind] = now
            suppressed = self._suppressed.pop(kind, 0)
        summary = (str(error).strip().splitlines() or [""])[0][:200]
        record.msg = "database unavailable (503 %s): %s: %s"
        record.args = (getattr(getattr(record, "request", None), "path", "-"), kind, summary)
        if suppressed:
            record.msg += "; %d more like it since the previous line not logged"
            record.args = (*record.args, suppressed)
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def _database_outage(record: logging.LogRecord) -> BaseException | None:
    """The OperationalError / InterfaceError behind a 503, if that is what this is."""
    from django.db import InterfaceError, OperationalError  # noqa: PLC0415 - logs load first

    if int(getattr(record, "status_code", 0)) != 503 or not record.exc_info:
        return None
    error = record.exc_info[1]
    return error if isinstance(error, OperationalError | InterfaceError) else None


def _outage_interval() -> float:
    from django.conf import settings  # noqa: PLC0415 - logs load before settings

    return float(
        getattr(settings, "MEMGOV_OUTAGE_LOG_INTERVAL_SECONDS", OUTAGE_LOG_INTERVAL_SECONDS)
    )


def configure(config: dict[str, Any]) -> None:
    """Django's LOGGING_CONFIG (and the Celery processes'): the LOGGING dict, with Python's
    warnings going through it too, so that they are JSON lines as well, not plain text
    on stderr."""
    logging.config.dictConfig(config)
    logging.captureWarnings(True)


def logging_config(*, json_lines: bool, level: str) -> dict[str, Any]:
    """The LOGGING dict: JSON lines in production (MEMGOV_LOG_FORMAT=json), plain text
    for a person at a terminal."""
    plain = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_id": {"()": "config.logs.RequestIdFilter"},
            "server_errors_only": {"()": "config.logs.ServerErrorsOnly"},
            "database_outage_summary": {"()": "config.logs.DatabaseOutageSummary"},
        },
        "formatters": {
            "json": {"()": "config.logs.JsonFormatter"},
            "plain": {"format": plain},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json" if json_lines else "plain",
                "filters": ["request_id"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "django.db.backends": {"level": "WARNING"},
            "django.request": {"filters": ["server_errors_only", "database_outage_summary"]},
        },
    }
