"""The input boundary's middleware (rules in ``core.inputs``): runs first, before
anything reads the body, so oversized, chunked or NUL-carrying requests, and query strings
that are not text, never reach a view."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from io import BytesIO
from typing import Any
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from agent_interface.problems import problem_response
from core.inputs import query_errors, strict_int


class InputBoundaryMiddleware:
    """Runs first: body size (declared or chunked), then NUL in the path, headers and forms,
    then the query string (a 422 naming each parameter that is not text: ``core.inputs``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refusal = _body_refusal(request) or _nul_refusal(request) or _query_refusal(request)
        return refusal or self.get_response(request)


def _body_refusal(request: HttpRequest) -> HttpResponse | None:
    refusal, body = _sized_body(request.META)
    if body is not None:
        request._stream = BytesIO(body)  # Django reads the body from here
    return refusal


def _sized_body(environ: dict[str, Any]) -> tuple[HttpResponse | None, bytes | None]:
    """A declared length over the limit refused, or a chunked body read under it: the WSGI
    server de-chunks (gunicorn does) but cannot give a length, so it is read here, once,
    and ``CONTENT_LENGTH`` set to its length. Returns the refusal, or the body read."""
    limit: int = settings.MAX_REQUEST_BODY_BYTES
    declared = environ.get("CONTENT_LENGTH") or ""
    if declared:
        length = strict_int(declared)
        if length is None:
            return problem_response(400, "Content-Length must be a number of bytes."), None
        if length > limit:
            return problem_response(413, f"Request body is larger than {limit} bytes."), None
        return None, None
    stream = environ.get("wsgi.input")
    if stream is None or "chunked" not in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
        return None, None
    body = stream.read(limit + 1)
    if len(body) > limit:
        _drain(stream)
        refusal = problem_response(413, f"Request body is larger than {limit} bytes.")
        refusal["Connection"] = "close"
        return refusal, None
    environ["CONTENT_LENGTH"] = str(len(body))
    return None, body


# How much of an oversized chunked body is read and thrown away before the 413: a client
# still sending when the server answers and closes gets a connection reset instead of the
# answer. Bounded, so an endless stream cannot hold a worker.
DRAIN_BYTES = 4 * 1024 * 1024


def _drain(stream: Any) -> None:
    left = DRAIN_BYTES
    while left > 0:
        chunk = stream.read(min(64 * 1024, left))
        if not chunk:
            return
        left -= len(chunk)


def _nul_refusal(request: HttpRequest) -> HttpResponse | None:
    if "\x00" in request.path:
        return problem_response(400, "The URL must not contain NUL characters.")
    for name, value in request.META.items():
        if name.startswith("HTTP_") and isinstance(value, str) and "\x00" in value:
            header = name.removeprefix("HTTP_").replace("_", "-").title()
            return problem_response(400, f"The {header} header must not contain NUL characters.")
    if _is_form(request) and any("\x00" in v for v in _form_values(request)):
        return problem_response(400, "Form fields must not contain NUL characters.")
    return None


def _query_refusal(request: HttpRequest) -> HttpResponse | None:
    """Every parameter of every method and path, before Django decodes it leniently
    (``%FF`` would reach a view as U+FFFD): a 422 naming the parameter."""
    if not (errors := query_errors(_raw_query_string(request.META))):
        return None
    first = next(iter(errors))
    return problem_response(422, f"Invalid content: {first}: {errors[first][0]}", errors=errors)


def _raw_query_string(environ: Mapping[str, Any]) -> bytes:
    """The query string's bytes: WSGI servers hand them over as ISO-8859-1 text (PEP 3333)."""
    query = environ.get("QUERY_STRING", "")
    try:
        return str(query).encode("iso-8859-1")
    except UnicodeEncodeError:  # a server that decoded UTF-8 instead
        return str(query).encode("utf-8", "surrogateescape")


def _is_form(request: HttpRequest) -> bool:
    """A dashboard or admin form post (the API takes JSON only and answers forms with 415)."""
    return (
        request.method == "POST"
        and not request.path.startswith("/api/")
        and request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data")
    )


def _form_values(request: HttpRequest) -> Iterator[str]:
    for key, values in request.POST.lists():
        yield key
        yield from values


class WsgiBodyBoundary:
    """The same body limit for a WSGI application outside Django (the MCP server at
    ``/mcp``, ``config.mcp``), which reads ``CONTENT_LENGTH`` bytes and would see a chunked
    body as empty: it gets the body sized."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        refusal, body = _sized_body(environ)
        if refusal is not None:
            status = f"{refusal.status_code} {refusal.reason_phrase}"
            start_response(status, list(refusal.items()))
            return [refusal.content]
        if body is not None:
            environ["wsgi.input"] = BytesIO(body)
        return self.app(environ, start_response)
