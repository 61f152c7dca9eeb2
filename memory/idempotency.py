"""``Idempotency-Key`` for POSTs: a retry with the same key and body gets the first answer;
the same key with another body is a 422. Records are kept per caller for 24 hours, so two
callers of one tenant never share (or learn about) each other's keys. A claim is a lease: a
request whose process died leaves its key to the next retry once the lease has run out."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import InvalidContent, StillProcessing
from core.models import IdempotencyRecord
from core.principals import Principal

HEADER = "Idempotency-Key"
IN_PROGRESS = 0


@dataclass(frozen=True)
class StoredAnswer:
    """The first answer to a request, as kept for its retries."""

    status: int
    body: Any
    headers: dict[str, Any]


class Replay(Exception):
    """The key was used before for the same request: here is its first answer."""

    def __init__(self, answer: StoredAnswer) -> None:
        self.answer = answer


def caller(principal: Principal) -> str:
    """The API key itself, not the agent's name: two keys may share a name but not labels,
    and a first answer can hold what only its caller may see."""
    if principal.api_key is not None:
        return f"key:{principal.api_key.pk}"
    return principal.name


def reserve(principal: Principal, key: str, digest: str) -> IdempotencyRecord:
    """Claim the key before running the request, so two concurrent retries run it once."""
    if not key or len(key) > 200:
        raise InvalidContent({HEADER: ["must be 1 to 200 characters"]})
    ttl = timedelta(seconds=settings.MEMGOV_IDEMPOTENCY_TTL_SECONDS)
    now = timezone.now()
    mine = IdempotencyRecord.objects.filter(
        tenant=principal.tenant, principal=caller(principal), key=key
    )
    mine.filter(created_at__lt=now - ttl).delete()
    try:
        with transaction.atomic():
            return IdempotencyRecord.objects.create(
                tenant=principal.tenant,
                principal=caller(principal),
                key=key,
                request_hash=digest,
                response_status=IN_PROGRESS,
                response_body={},
                created_at=now,
            )
    except IntegrityError:
        existing = mine.get()
    if existing.request_hash != digest:
        raise InvalidContent({HEADER: ["was already used with a different request"]})
    if existing.response_status == IN_PROGRESS:
        return _take_over(existing, now)
    raise Replay(
        StoredAnswer(
            existing.response_status, existing.response_body, dict(existing.response_headers)
        )
    )


def _take_over(claim: IdempotencyRecord, now: datetime) -> IdempotencyRecord:
    """A claim older than the lease belongs to a request whose process died (a live one is
    cut off by the server's timeout well before): this retry runs it. The update is
    conditional, so of two retries only one takes it over."""
    lease = timedelta(seconds=settings.MEMGOV_IDEMPOTENCY_LEASE_SECONDS)
    taken = IdempotencyRecord.objects.filter(
        pk=claim.pk, response_status=IN_PROGRESS, created_at__lt=now - lease
    ).update(created_at=now)
    if not taken:
        raise StillProcessing("A request with this Idempotency-Key is still being processed.")
    claim.created_at = now
    return claim


def record_answer(
    record: IdempotencyRecord, status: int, body: Any, headers: dict[str, Any]
) -> None:
    """Keep the first answer for the retries (REST responses and MCP tool results alike)."""
    if status >= 500:
        record.delete()  # a failure of ours: let the retry run again
        return
    IdempotencyRecord.objects.filter(pk=record.pk).update(
        response_status=status, response_body=body, response_headers=headers
    )


def release(record: IdempotencyRecord) -> None:
    IdempotencyRecord.objects.filter(pk=record.pk, response_status=IN_PROGRESS).delete()
