"""When to send a request again, and how long to wait first. Pure: both clients ask it.

Retrying a POST is safe because every POST carries an ``Idempotency-Key`` that stays the
same across the attempts: the server answers a repeat with the first answer."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from memgov_client import errors
from memgov_client._ops import Op

RETRY_STATUSES = frozenset({429, 502, 503, 504})
# A 409 of this type: the first attempt of this very request still runs on the server (its
# answer was lost on the way back); any other 409 is a real conflict and never retried.
IN_PROGRESS_TYPE = "https://memgov.dev/problems/idempotency-key-in-use"
# No answer arrived, or it broke off: the request may or may not have been handled.
RETRY_EXCEPTIONS: tuple[type[Exception], ...] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)
USER_AGENT = "memgov-client/0.1"


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` counts the first try. Backoff doubles from ``backoff`` up to
    ``max_backoff`` with jitter; a server's ``Retry-After`` is honoured exactly, unless it
    asks for more than ``max_retry_after`` seconds, when the error is raised at once."""

    attempts: int = 4
    backoff: float = 0.5
    max_backoff: float = 30.0
    max_retry_after: float = 120.0

    def backoff_delay(self, attempt: int) -> float:
        ceiling = min(self.max_backoff, self.backoff * float(2**attempt))
        # Equal jitter: at least half the ceiling, so retries spread but never hammer.
        return ceiling / 2 + random.uniform(0, ceiling / 2)  # noqa: S311 - not cryptographic

    def delay_after_response(self, attempt: int, response: httpx.Response) -> float | None:
        """Seconds to wait before the next attempt, or None to stop and return/raise."""
        if not _retryable(response) or attempt + 1 >= self.attempts:
            return None
        retry_after = errors.retry_after_seconds(response)
        if retry_after is None:
            return self.backoff_delay(attempt)
        if retry_after > self.max_retry_after:
            return None
        return retry_after

    def delay_after_error(self, attempt: int, exc: Exception) -> float | None:
        if not isinstance(exc, RETRY_EXCEPTIONS) or attempt + 1 >= self.attempts:
            return None
        return self.backoff_delay(attempt)


def _retryable(response: httpx.Response) -> bool:
    if response.status_code in RETRY_STATUSES:
        return True
    if response.status_code != 409:
        return False
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("type") == IN_PROGRESS_TYPE


@dataclass(frozen=True)
class Prepared:
    """One request, built once: every attempt sends the same bytes and the same key."""

    method: str
    url: str
    params: Mapping[str, str]
    headers: dict[str, str]
    content: bytes | None


def prepare(op: Op[Any], api_key: str) -> Prepared:
    headers = {
        "Authorization": f"Bearer {api_key}",
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
        **op.headers,
    }
    content = op.content()
    if content is not None:
        headers["Content-Type"] = "application/json"
    if op.method == "POST":
        headers["Idempotency-Key"] = str(uuid.uuid4())
    return Prepared(op.method, op.path, op.params, headers, content)


def outcome(op: Op[Any], response: httpx.Response) -> Any:
    """The operation's result, or its problem raised as a typed exception."""
    if response.is_success or response.status_code in op.accept:
        return op.read(response)
    raise errors.error_for(response)


def no_answer(exc: Exception) -> errors.TransportFailed:
    return errors.TransportFailed(
        f"no answer from the server: {exc!r}", status=0, title="Transport failed"
    )
