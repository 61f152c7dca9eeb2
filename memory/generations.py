"""Resolution cache entries under generations (docs/design.md, Cache).

An entry's key names the tenant, the subject, the Redis server's boot (``run_id``), the
subject's generation, the tenant's policy generation, and a digest of everything else the
answer depends on (``shape``: the caller's labels, the context, the fields, ``explain``).
One script reads both generations and the entry; a change moves a generation on, so the
entries written under the old one are never read again.

- A change to a subject's memory moves the subject's generation on
  (``invalidate_subject_on_commit``); publishing a policy moves the tenant's policy
  generation on (``invalidate_policy_on_commit``).
- Fail-closed: a change holds its generations before it commits (they move on at once,
  and readers do not store answers under a held generation); after commit they move on
  again and the hold ends, before the request returns. A change whose hold cannot reach
  Redis is refused (``CacheUnavailable``, 503, nothing committed). A process that dies
  between commit and release leaves nothing stale: nothing was stored under the held
  generation, and the hold ends by itself after ``HOLD_SECONDS``. A release that failed
  is retried before this process next uses Redis.
- A missing generation (new, expired, evicted, Redis emptied) starts from a random value,
  and the key names the server's ``run_id``: after Redis is emptied, restarted or restored
  from a snapshot, no entry written before can be read again.
- An entry ends at the next expiry or validity bound of its answer's candidates, or after
  ``MAX_ENTRY_SECONDS``."""

from __future__ import annotations

import hashlib
import logging
import os
import random
import secrets
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import metrics, redis_client
from core.errors import CacheUnavailable
from core.redis_client import REDIS_DOWN, redis_failed, run_script

logger = logging.getLogger(__name__)

MAX_ENTRY_SECONDS = 60
GENERATION_SECONDS = 24 * 3600
# How long a change's hold on its generations lasts at most (its commit and release
# normally end it within milliseconds; a dead process's ends by itself).
HOLD_SECONDS = 30

# A generation that is missing starts again from a random value, so it never returns to
# a value an old entry was written under; that is also why generations may expire:
# GENERATION_SECONDS bounds their memory.
_LIFETIME = f"local lifetime = {GENERATION_SECONDS}\n"

# The entry key under the current generations, the entry, and how many changes hold one
# of the generations (a hold is a sorted set of the changes' tokens, scored by the time
# each ends by itself). KEYS: subject and policy generations; ARGV: their fresh starts,
# the entry key's prefix and digest.
READ_SCRIPT = (
    _LIFETIME
    + """
local function generation(key, start)
  local value = redis.call('GET', key)
  if value then return value end
  redis.call('SET', key, start, 'EX', lifetime)
  return start
end
local function held(key)
  if redis.call('EXISTS', key .. ':hold') == 0 then return 0 end
  local now = redis.call('TIME')
  return redis.call('ZCOUNT', key .. ':hold', now[1] * 1000 + math.floor(now[2] / 1000), '+inf')
end
local boot = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)')
local key = ARGV[3] .. boot .. ':' .. generation(KEYS[1], ARGV[1]) .. ':'
  .. generation(KEYS[2], ARGV[2]) .. ':' .. ARGV[4]
return {key, redis.call('GET', key), held(KEYS[1]) + held(KEYS[2])}
"""
)

_MOVE_ON = (
    _LIFETIME
    + """
local function move_on(key, start)
  if redis.call('EXISTS', key) == 0 then redis.call('SET', key, start, 'EX', lifetime) end
  redis.call('INCR', key)
end
"""
)
# Each generation moves on (ARGV: their fresh starts).
_BUMP_SCRIPT = (
    _MOVE_ON
    + """
for i, key in ipairs(KEYS) do move_on(key, ARGV[i]) end
return #KEYS
"""
)
# Before a change commits: each generation moves on and is held by the change's token
# (ARGV[#KEYS + 1]) for at most ARGV[#KEYS + 2] ms; holds that ended are dropped.
_HOLD_SCRIPT = (
    _MOVE_ON
    + """
local token, span = ARGV[#KEYS + 1], tonumber(ARGV[#KEYS + 2])
local now = redis.call('TIME')
now = now[1] * 1000 + math.floor(now[2] / 1000)
for i, key in ipairs(KEYS) do
  move_on(key, ARGV[i])
  redis.call('ZREMRANGEBYSCORE', key .. ':hold', '-inf', now)
  redis.call('ZADD', key .. ':hold', now + span, token)
  redis.call('PEXPIRE', key .. ':hold', span)
end
return #KEYS
"""
)
# After it committed: each generation moves on again (what was read under the held one
# is not read again) and the change's hold ends.
_RELEASE_SCRIPT = (
    _MOVE_ON
    + """
for i, key in ipairs(KEYS) do
  move_on(key, ARGV[i])
  redis.call('ZREM', key .. ':hold', ARGV[#KEYS + 1])
end
return #KEYS
"""
)

_lock = threading.Lock()
_pending: set[str] = set()  # generations whose move failed; moved before Redis is used again

# Fresh starts need not be secret, only unlikely to repeat (reseeded in a forked child).
_starts = random.Random()  # noqa: S311 - not a secret
os.register_at_fork(after_in_child=_starts.seed)


def _fresh_start() -> int:
    return _starts.getrandbits(62)


def subject_generation_key(tenant_id: int, subject_id: str) -> str:
    return f"mg:gen:{tenant_id}:{subject_id}"


def policy_generation_key(tenant_id: int) -> str:
    return f"mg:gen:{tenant_id}"


def generation_keys(tenant_id: int, subject_id: str) -> list[str]:
    """The generations an answer about the subject is cached under, in the order the
    entry's key names them."""
    return [subject_generation_key(tenant_id, subject_id), policy_generation_key(tenant_id)]


def entry_prefix(tenant_id: int, subject_id: str) -> str:
    """What every entry key about the subject begins with (erasure deletes by it)."""
    return f"mg:res:{tenant_id}:{subject_id}:"


def _move_on(keys: Iterable[str]) -> None:
    """Each generation moves on (created at a random start); raises when Redis fails."""
    names = sorted(keys)
    if names:
        run_script(_BUMP_SCRIPT, names, [_fresh_start() for _ in names])


def _move_pending() -> None:
    """Moves that failed earlier happen before this process trusts Redis again."""
    with _lock:
        keys = set(_pending)
    if keys:
        _move_on(keys)
        with _lock:
            _pending.difference_update(keys)
        logger.warning("resolution cache: %d delayed generation bumps applied", len(keys))


def bump(keys: Iterable[str]) -> None:
    """Make every cached answer under these generations unreadable. Never raises: a bump
    that fails is retried before this process next uses Redis. Bumps whenever Redis is
    configured, even with the resolve cache off here: other processes may use it."""
    if not settings.CACHE_URL:
        return
    keys = set(keys)
    try:
        _move_pending()
        _move_on(keys)
    except REDIS_DOWN:
        with _lock:
            _pending.update(keys)
        redis_failed("bump")


def _hold_until_committed(keys: set[str]) -> None:
    """Fail-closed (module docstring): hold the generations now, inside the caller's
    transaction, and release them once it commits. ``CacheUnavailable`` when Redis cannot
    be reached, whatever the cooldown says: the caller's transaction then rolls back, and
    nothing changed that a cached answer could still contradict."""
    if not settings.CACHE_URL or not keys:
        return
    if not transaction.get_connection().in_atomic_block:
        bump(keys)  # the change is already committed: there is nothing left to refuse
        return
    names = sorted(keys)
    token = secrets.token_hex(8)
    starts = [_fresh_start() for _ in names]
    try:
        _move_pending()
        run_script(_HOLD_SCRIPT, names, [*starts, token, HOLD_SECONDS * 1000])
    except REDIS_DOWN as exc:
        redis_failed("hold")
        raise CacheUnavailable(
            "The resolution cache cannot be reached, so this change could not end the "
            "answers cached before it; nothing was changed. Try again shortly."
        ) from exc
    transaction.on_commit(lambda: _release(names, token))


def _release(names: list[str], token: str) -> None:
    try:
        run_script(_RELEASE_SCRIPT, names, [*(_fresh_start() for _ in names), token])
    except REDIS_DOWN:
        # The hold ends by itself; the generations still move on before this process
        # next uses Redis, so nothing read under the held ones is read again.
        with _lock:
            _pending.update(names)
        redis_failed("bump")


def invalidate_subject_on_commit(pairs: Iterable[tuple[int, str | None]]) -> None:
    """When the caller's transaction commits, answers about these (tenant id, subject id)
    pairs are no longer served from the cache, on any node."""
    _hold_until_committed({subject_generation_key(t, s) for t, s in pairs if s is not None})


def invalidate_policy_on_commit(tenant_id: int) -> None:
    """A new policy version: every cached answer of the tenant is stale."""
    _hold_until_committed({policy_generation_key(tenant_id)})


@dataclass(frozen=True)
class Entry:
    """What the read script found: the entry key under the current generations, the
    stored answer (JSON) if there is one, and whether a change holds the generations
    (then nothing may be stored under them)."""

    key: str
    stored: bytes | None
    held: bool


def read_call(tenant_id: int, subject_id: str, shape: Mapping[str, Any]) -> redis_client.ScriptCall:
    """The read script's call for the entry of ``shape`` about the subject."""
    canonical = orjson.dumps(shape, option=orjson.OPT_SORT_KEYS)
    digest = hashlib.sha256(canonical).hexdigest()[:32]
    args = [_fresh_start(), _fresh_start(), entry_prefix(tenant_id, subject_id), digest]
    return READ_SCRIPT, generation_keys(tenant_id, subject_id), args


def entry_read(result: Any) -> Entry:
    """What the read script answered."""
    key, stored, held = result
    return Entry(key=key.decode(), stored=stored, held=bool(held))


def read_entry(tenant_id: int, subject_id: str, shape: Mapping[str, Any]) -> Entry:
    """One round trip; raises when Redis fails."""
    return entry_read(run_script(*read_call(tenant_id, subject_id, shape)))


def may_prefetch() -> bool:
    """Whether a read may be sent ahead now: the cache is on and Redis trusted, and no
    generation move of this process is pending (those go first, ``_move_pending``)."""
    return redis_client.enabled() and redis_client.redis_usable() and not _pending


# What a computation hands the cache: the answer, and when it stops being true (or None).
Computed = tuple[dict[str, Any], datetime | None]


def get_or_compute(
    *,
    tenant_id: int,
    subject_id: str,
    shape: Mapping[str, Any],
    compute: Callable[[], Computed],
    prefetched: redis_client.Prefetch | None = None,
) -> dict[str, Any] | bytes:
    """The cached answer about one subject for ``shape`` as it was stored (JSON), or
    ``compute()``'s body, stored until its end of truth. When Redis fails (or failed
    moments ago) the answer is computed, correct and slower."""
    if not redis_client.enabled():
        metrics.resolve_cache_outcome("disabled")
        return compute()[0]
    if not redis_client.redis_usable():
        redis_client.stats["bypassed"] += 1
        metrics.resolve_cache_outcome("bypassed")
        return compute()[0]
    try:
        entry = _prefetched_or_read(tenant_id, subject_id, shape, prefetched)
    except REDIS_DOWN:
        redis_failed("read")
        metrics.resolve_cache_outcome("error")
        return compute()[0]
    if entry.stored is not None:
        redis_client.stats["hits"] += 1
        metrics.resolve_cache_outcome("hit")
        return entry.stored
    redis_client.stats["misses"] += 1
    metrics.resolve_cache_outcome("miss")
    body, next_change = compute()
    if entry.held:
        redis_client.stats["held"] += 1
    else:
        _store(entry.key, body, next_change)
    return body


def _prefetched_or_read(
    tenant_id: int,
    subject_id: str,
    shape: Mapping[str, Any],
    prefetched: redis_client.Prefetch | None,
) -> Entry:
    """The entry the prefetch read when it was for this very call, else a read now."""
    if prefetched is not None:
        call = read_call(tenant_id, subject_id, shape)
        # The same keys, entry prefix and shape digest; the fresh starts (used only when a
        # generation is missing) differ by nature.
        if (call[0], list(call[1]), list(call[2][2:])) == (
            prefetched.call[0],
            list(prefetched.call[1]),
            list(prefetched.call[2][2:]),
        ):
            if isinstance(prefetched.result, Exception):
                raise prefetched.result
            return entry_read(prefetched.result)
    _move_pending()
    return read_entry(tenant_id, subject_id, shape)


def _store(key: str, body: dict[str, Any], next_change: datetime | None) -> None:
    now = timezone.now()
    until = now + timedelta(seconds=MAX_ENTRY_SECONDS)
    if next_change is not None:
        until = min(until, next_change)
    if until <= now:
        return
    try:
        payload = orjson.dumps(body)
    except orjson.JSONEncodeError:
        # An integer beyond 64 bits: orjson would read it back as a float. Such an answer
        # is served uncached rather than rounded.
        redis_client.stats["uncacheable"] += 1
        return
    try:
        # An absolute end (PXAT, whole milliseconds rounded down): the entry is gone at the
        # boundary however long this write took to reach Redis.
        redis_client.redis_client().set(key, payload, pxat=int(until.timestamp() * 1000))
    except REDIS_DOWN:
        redis_failed("write")
