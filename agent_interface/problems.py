"""Every API error as RFC 9457 ``application/problem+json``.

DRF errors pass through ``problem_exception_handler``; errors Django raises before or
outside DRF (400, 403, 404, 413, 500) go through the ``handler*`` views in ``config.urls``.
"""

from __future__ import annotations

import json
import sys
from http import HTTPStatus
from typing import Any

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.views import defaults as html_views
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler

from core.errors import DomainError

PROBLEM_CONTENT_TYPE = "application/problem+json"


def problem_body(status: int, detail: str, **extra: Any) -> dict[str, Any]:
    phrase = HTTPStatus(status).phrase
    slug = phrase.lower().replace(" ", "-").replace("'", "")
    return {
        "type": f"https://memgov.dev/problems/{slug}",
        "title": phrase,
        "status": status,
        "detail": detail,
        **extra,
    }


def problem_response(status: int, detail: str, **extra: Any) -> HttpResponse:
    """A problem answer for code paths outside DRF (middleware, Django's handlers)."""
    return HttpResponse(
        json.dumps(problem_body(status, detail, **extra)),
        status=status,
        content_type=PROBLEM_CONTENT_TYPE,
    )


class Problem(exceptions.APIException):
    """An API error with an explicit status and extra members (e.g. ``current_version``)."""

    def __init__(self, status: int, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status_code = status
        self.extra = extra


def _flatten_errors(data: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF nests serializer errors; the contract wants ``{"field": ["message"]}``."""
    if isinstance(data, dict):
        out: dict[str, list[str]] = {}
        for key, value in data.items():
            name = "request" if key == "non_field_errors" else str(key)
            out.update(_flatten_errors(value, f"{prefix}.{name}" if prefix else name))
        return out
    if isinstance(data, list) and data and all(isinstance(x, str) for x in data):
        return {prefix or "request": [str(x) for x in data]}
    if isinstance(data, list):
        out = {}
        for index, item in enumerate(data):
            if item:
                out.update(_flatten_errors(item, f"{prefix}[{index}]"))
        return out
    return {prefix or "request": [str(data)]}


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    problem_type = getattr(exc, "problem_type", None)
    retry_after = getattr(exc, "retry_after_seconds", None)
    if isinstance(exc, DomainError):
        exc = Problem(exc.status, exc.detail, **exc.extra)
    response = exception_handler(exc, context)
    if response is None:
        return None  # an unexpected error: Django's handler500 answers
    status = response.status_code
    extra: dict[str, Any] = {}
    if isinstance(exc, Problem):
        extra = dict(exc.extra)
        detail = str(exc.detail)
    elif isinstance(exc, exceptions.ValidationError):
        status = 422
        extra["errors"] = _flatten_errors(exc.detail)
        first = next(iter(extra["errors"]))
        detail = f"Invalid content: {first}: {extra['errors'][first][0]}"
    else:
        raw = response.data.get("detail", "") if isinstance(response.data, dict) else ""
        detail = str(raw) or HTTPStatus(status).phrase
    body = problem_body(status, detail, **extra)
    if problem_type is not None:
        body["type"] = f"https://memgov.dev/problems/{problem_type}"
    kept = ("Retry-After", "WWW-Authenticate", "Allow")
    headers = {k: v for k, v in response.headers.items() if k in kept}
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return Response(body, status=status, headers=headers, content_type=PROBLEM_CONTENT_TYPE)


def _wants_problem(request: HttpRequest) -> bool:
    return request.path.startswith("/api/") or "json" in request.headers.get("Accept", "")


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return problem_response(400, "The request could not be understood.")


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if not _wants_problem(request):
        return html_views.permission_denied(request, exception or Exception())
    return problem_response(403, str(exception) or "You are not allowed to do this.")


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if not _wants_problem(request):
        return html_views.page_not_found(request, exception or Exception())
    return problem_response(404, "Not found.")


# Seconds a client is asked to wait when the database does not answer.
DATABASE_DOWN_RETRY_AFTER = 5


def server_error(request: HttpRequest) -> HttpResponse:
    """500, or a 503 with ``Retry-After`` when the database did not answer: a
    connection that failed or timed out (MEMGOV_DB_CONNECT_TIMEOUT) is an outage the
    client should wait out, not a bug. Django calls this inside its ``except`` block."""
    if isinstance(sys.exc_info()[1], OperationalError | InterfaceError):
        response = problem_response(503, "The database is not answering; try again shortly.")
        response["Retry-After"] = str(DATABASE_DOWN_RETRY_AFTER)
        return response
    if not _wants_problem(request):
        return html_views.server_error(request)
    return problem_response(500, "Internal error; it has been logged.")


@csrf_exempt  # no endpoint to protect: without this a write met the CSRF check's HTML 403
def api_not_found(request: HttpRequest) -> HttpResponse:
    """Whatever the method: an unknown API path is a problem 404."""
    return problem_response(404, f"No API endpoint at {request.path}.")
