"""Every problem answer (RFC 9457, docs/api.md Conventions) as a typed exception.

Callers catch what they can act on: ``StaleVersion`` (re-read, then correct again),
``Throttled`` (wait ``retry_after``), ``Invalid`` (fix the fields in ``errors``)."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx


class MemgovError(Exception):
    """A problem answer: ``type`` (URI), ``status`` and ``detail`` as the server sent them."""

    def __init__(
        self,
        detail: str,
        *,
        status: int,
        type: str = "about:blank",  # the RFC 9457 member's name
        title: str = "",
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{status} {title or type}: {detail}")
        self.type = type
        self.status = status
        self.title = title
        self.detail = detail
        self.body: dict[str, Any] = body or {}


class BadRequest(MemgovError):
    """400: the body was not JSON the server could parse."""


class Unauthorized(MemgovError):
    """401: no key, an unknown key, or a revoked one."""


class Forbidden(MemgovError):
    """403: the key is known but may not do this (e.g. an agent key approving)."""


class NotFound(MemgovError):
    """404: absent, another tenant's, or not visible to this key (never told apart)."""


class MethodNotAllowed(MemgovError):
    """405."""


class Conflict(MemgovError):
    """409: an illegal transition (e.g. approving twice) or a stale version."""


class StaleVersion(Conflict):
    """409 on a correction: someone changed the item since the caller read it."""

    def __init__(self, detail: str, *, current_version: int, **kwargs: Any) -> None:
        super().__init__(detail, **kwargs)
        self.current_version = current_version


class Gone(MemgovError):
    """410: the subject was erased."""


class PayloadTooLarge(MemgovError):
    """413: the body is over the server's limit (256 KiB)."""


class UnsupportedMediaType(MemgovError):
    """415: the body was not sent as JSON."""


class Invalid(MemgovError):
    """422: the content breaks a rule; ``errors`` maps each field to its messages."""

    def __init__(self, detail: str, *, errors: dict[str, list[str]], **kwargs: Any) -> None:
        super().__init__(detail, **kwargs)
        self.errors = errors


class PreconditionRequired(MemgovError):
    """428: a correction without ``If-Match``."""


class Throttled(MemgovError):
    """429 after the client's retries ran out; ``retry_after`` is in seconds."""

    def __init__(self, detail: str, *, retry_after: float | None, **kwargs: Any) -> None:
        super().__init__(detail, **kwargs)
        self.retry_after = retry_after


class ServerError(MemgovError):
    """5xx after the client's retries ran out (or a 500, which is never retried blindly)."""


class TransportFailed(MemgovError):
    """No answer at all (connection refused, dropped, timed out) after every retry;
    ``status`` is 0 and the httpx error is the ``__cause__``."""


class UnexpectedResponse(MemgovError):
    """An answer that is neither a success nor a problem the contract describes."""


_BY_STATUS: dict[int, type[MemgovError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: Invalid,
    428: PreconditionRequired,
    429: Throttled,
}


def retry_after_seconds(response: httpx.Response) -> float | None:
    """``Retry-After`` as seconds; HTTP dates are turned into a delay from now."""
    raw = response.headers.get("Retry-After")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def error_for(response: httpx.Response) -> MemgovError:
    """The typed exception for a non-2xx answer."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {}
    status = response.status_code
    common: dict[str, Any] = {
        "status": status,
        "type": str(body.get("type") or "about:blank"),
        "title": str(body.get("title") or response.reason_phrase),
        "body": body,
    }
    detail = str(body.get("detail") or response.reason_phrase or f"HTTP {status}")
    if status == 409 and isinstance(body.get("current_version"), int):
        return StaleVersion(detail, current_version=body["current_version"], **common)
    if status == 422:
        errors = body.get("errors")
        return Invalid(detail, errors=errors if isinstance(errors, dict) else {}, **common)
    if status == 429:
        return Throttled(detail, retry_after=retry_after_seconds(response), **common)
    if status >= 500:
        return ServerError(detail, **common)
    return _BY_STATUS.get(status, UnexpectedResponse)(detail, **common)
