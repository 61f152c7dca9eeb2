"""The input boundary's middleware (rules in ``core.inputs``): runs first, before
anything reads the body, so oversized, chunked or NUL-carrying requests never reach a view."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from io import BytesIO
from typing import Any
from urllib.parse import unquote_plus

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from config.problems import problem_response
from core.inputs import strict_int


class InputBoundaryMiddleware:
    """Runs first: body size (declared or chunked), then NUL in the URL, headers and forms."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refusal = _body_refusal(request) or _nul_refusal(request)
        return refusal or self.get_response(request)


def _body_refusal(request: HttpRequest) -> HttpResponse | None:
    limit: int = settings.MAX_REQUEST_BODY_BYTES
    declared = request.META.get("CONTENT_LENGTH") or ""
    if declared:
        length = strict_int(declared)
        if length is None:
            return problem_response(400, "Content-Length must be a number of bytes.")
        if length > limit:
            return problem_response(413, f"Request body is larger than {limit} bytes.")
        return None
    if "chunked" not in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
        return None
    # The WSGI server de-chunks (gunicorn does) but cannot give a length: read it here, once,
    # with the same limit, and hand the rest of Django an ordinary sized body.
    stream = request.META.get("wsgi.input")
    if stream is None:  # ASGI: AsgiBodyBoundary has already sized it
        return None
    body = stream.read(limit + 1)
    if len(body) > limit:
        _drain(stream)
        refusal = problem_response(413, f"Request body is larger than {limit} bytes.")
        refusal["Connection"] = "close"
        return refusal
    request.META["CONTENT_LENGTH"] = str(len(body))
    request._stream = BytesIO(body)  # Django reads the body from here
    return None


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
    query = unquote_plus(request.META.get("QUERY_STRING", ""))
    if "\x00" in request.path or "\x00" in query:
        return problem_response(400, "The URL must not contain NUL characters.")
    for name, value in request.META.items():
        if name.startswith("HTTP_") and isinstance(value, str) and "\x00" in value:
            header = name.removeprefix("HTTP_").replace("_", "-").title()
            return problem_response(400, f"The {header} header must not contain NUL characters.")
    if _is_form(request) and any("\x00" in v for v in _form_values(request)):
        return problem_response(400, "Form fields must not contain NUL characters.")
    return None


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


class AsgiBodyBoundary:
    """The body limit under ASGI (``config.asgi``), before Django's handler, which reads a
    whole body into a spooled file before any middleware runs. A declared length over the
    limit is refused unread; a chunked body is read here under the limit and handed on with
    its length, as gunicorn's sync workers and ``_body_refusal`` do under WSGI."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit: int = settings.MAX_REQUEST_BODY_BYTES
        headers = Headers(scope=scope)
        declared = strict_int(headers.get("content-length") or "")
        if declared is not None and declared > limit:
            await _asgi_problem(send, 413, f"Request body is larger than {limit} bytes.")
            return
        if declared is not None or "chunked" not in headers.get("transfer-encoding", "").lower():
            await self.app(scope, receive, send)
            return
        await self._sized(scope, receive, send, limit)

    async def _sized(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        body, more = bytearray(), True
        while more and len(body) <= limit:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = bool(message.get("more_body", False))
        if len(body) > limit:
            left = DRAIN_BYTES
            while more and left > 0:
                message = await receive()
                left -= len(message.get("body", b""))
                more = message["type"] == "http.request" and bool(message.get("more_body"))
            await _asgi_problem(
                send, 413, f"Request body is larger than {limit} bytes.", close=True
            )
            return
        sized = [(k, v) for k, v in scope["headers"] if k.lower() != b"transfer-encoding"]
        sized.append((b"content-length", str(len(body)).encode()))
        handed: list[bool] = []

        async def replay() -> Message:
            if not handed:
                handed.append(True)
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app({**scope, "headers": sized}, replay, send)


async def _asgi_problem(send: Send, status: int, detail: str, *, close: bool = False) -> None:
    response = problem_response(status, detail)
    headers = [(b"content-type", response["Content-Type"].encode())]
    headers.append((b"content-length", str(len(response.content)).encode()))
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": response.content})
