"""Resolution cache with per-subject generations (DESIGN.md, Cache).

Readers read the subject's generation *before* the database, and key the entry with it;
writers bump it (atomic INCR, never written back) after commit and before the request
returns. A slow reader can therefore only write under a generation no one reads again.
A generation starts from a random 62-bit value, so after Redis is emptied or restarted
no counter can return to a value an old entry was keyed with.

Only answers for "now" (no ``valid_at``/``known_at``) are cached, and an entry lives at
most until the next expiry or validity bound of its candidates. When Redis fails,
resolve reads the database (correct, slower; logged and counted) and writes succeed.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache

from audit.chain import canonical_json
from memory.principals import Principal
from memory.resolution import ResolveRequest, decide, resolution_body
from memory.selectors import current_policy
from memory.serializers import iso

logger = logging.getLogger(__name__)

MAX_ENTRY_SECONDS = 300
failures = {"read": 0, "write": 0, "bump": 0}


def enabled() -> bool:
    """A process-local cache cannot be invalidated from the worker: only Redis is used."""
    return bool(settings.MEMGOV_RESOLVE_CACHE and settings.REDIS_URL)


def _generation_key(tenant_id: int, subject_id: str) -> str:
    return f"mg:gen:{tenant_id}:{subject_id}"


def _fresh_start() -> int:
    return secrets.randbits(62)


def _redis() -> Any:
    from django_redis import get_redis_connection

    return get_redis_connection("default")


def generation(tenant_id: int, subject_id: str) -> int:
    client = _redis()
    key = _generation_key(tenant_id, subject_id)
    client.set(key, _fresh_start(), nx=True)
    return int(client.get(key))


def bump(tenant_id: int, subject_id: str | None) -> None:
    """Make every cached answer about this subject unreadable. Called after commit."""
    if not enabled() or subject_id is None:
        return
    try:
        client = _redis()
        key = _generation_key(tenant_id, subject_id)
        client.set(key, _fresh_start(), nx=True)
        client.incr(key)
    except Exception:
        failures["bump"] += 1
        logger.error("cache generation bump failed for %s/%s", tenant_id, subject_id, exc_info=True)


def _entry_key(principal: Principal, request: ResolveRequest, gen: int, policy: int) -> str:
    shape = canonical_json(
        {
            "labels": sorted(principal.labels),
            "context": dict(request.context),
            "fields": sorted(request.fields) if request.fields is not None else None,
            "explain": request.explain,
        }
    )
    digest = hashlib.sha256(shape.encode()).hexdigest()[:32]
    return f"mg:res:{principal.tenant.pk}:{request.subject}:{gen}:{policy}:{digest}"


def _ttl(next_change: datetime | None, now: datetime) -> float:
    if next_change is None:
        return MAX_ENTRY_SECONDS
    return min(MAX_ENTRY_SECONDS, (next_change - now).total_seconds())


def _fresh(
    principal: Principal, request: ResolveRequest, now: datetime
) -> tuple[dict[str, Any], float]:
    decision = decide(principal, request, now)
    return resolution_body(decision, explain=request.explain), _ttl(decision.next_change, now)


def cached_resolution(
    principal: Principal, request: ResolveRequest, now: datetime
) -> dict[str, Any]:
    if not enabled() or request.valid_at is not None or request.known_at is not None:
        return _fresh(principal, request, now)[0]
    try:
        gen = generation(principal.tenant.pk, request.subject)
        policy = current_policy(principal.tenant).version
        key = _entry_key(principal, request, gen, policy)
        entry = cache.get(key)
    except Exception:
        failures["read"] += 1
        logger.warning(
            "resolution cache unavailable; answering from the database (%s so far)",
            failures["read"],
            exc_info=settings.DEBUG,
        )
        return _fresh(principal, request, now)[0]
    if entry is not None and entry["until"] > now.timestamp():
        body = dict(entry["body"])
        body["valid_at"] = body["known_at"] = iso(now)
        return body
    body, ttl = _fresh(principal, request, now)
    _store(key, body, now, ttl)
    return body


def _store(key: str, body: dict[str, Any], now: datetime, ttl: float) -> None:
    delay = getattr(settings, "MEMGOV_TEST_DELAY_BEFORE_CACHE_WRITE", 0)
    if delay:
        time.sleep(delay)  # tests only: widen the window between the read and the write
    if ttl <= 0:
        return
    try:
        cache.set(key, {"body": body, "until": now.timestamp() + ttl}, timeout=max(1, int(ttl)))
    except Exception:
        failures["write"] += 1
        logger.warning("resolution cache write failed", exc_info=settings.DEBUG)
