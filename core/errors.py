"""Domain errors raised by services and selectors; the API maps each to a problem answer."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    status = 400

    def __init__(self, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra


class InvalidContent(DomainError):
    """422 with ``errors`` naming every broken field; nothing was written."""

    status = 422

    def __init__(self, errors: dict[str, list[str]]) -> None:
        first = next(iter(errors))
        super().__init__(f"Invalid content: {first}: {errors[first][0]}", errors=errors)
        self.errors = errors


class Unparseable(DomainError):
    """400: the body (or an MCP tool's arguments) is not JSON the input boundary reads."""

    status = 400


class NotFound(DomainError):
    status = 404

    def __init__(self, detail: str = "Not found.") -> None:
        super().__init__(detail)


class Forbidden(DomainError):
    status = 403


class Conflict(DomainError):
    status = 409


class StillProcessing(Conflict):
    """409: the first request with this Idempotency-Key has not answered yet. Its own
    problem type and a ``Retry-After`` tell a client that retrying soon is right, unlike
    an illegal transition, which no retry fixes."""

    problem_type = "idempotency-key-in-use"
    retry_after_seconds = 1


class Gone(DomainError):
    """410 ``erased``: the subject was erased; nothing about it is answered any more."""

    status = 410
    problem_type = "erased"


class CacheUnavailable(DomainError):
    """503: a change could not end the answers cached before it (Redis unreachable), so it
    was not made; retrying once Redis answers is right."""

    status = 503
    problem_type = "cache-unavailable"
    retry_after_seconds = 1


class PreconditionRequired(DomainError):
    status = 428
