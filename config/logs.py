"""Structured logs: one JSON object per line, with the request id of the HTTP request (or
of the request that enqueued the Celery task) on every line.

Log records carry ids, routes, statuses and timings only. Nothing here logs a request
body, a query string, a header value other than the request id, or an API key."""

from __future__ import annotations

import json
import logging
import re
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

# The id of the request (or task) this code runs for; "-" outside of both.
request_id: ContextVar[str] = ContextVar("memgov_request_id", default="-")
task_context: ContextVar[dict[str, str] | None] = ContextVar("memgov_task", default=None)

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


class ServerErrorsOnly(logging.Filter):
    """On ``django.request``: keep 5xx (with their tracebacks), drop 4xx, which the request
    line (``memgov.request``) already records once with its status."""

    def filter(self, record: logging.LogRecord) -> bool:
        return int(getattr(record, "status_code", 500)) >= 500


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
            "django.request": {"filters": ["server_errors_only"]},
        },
    }
