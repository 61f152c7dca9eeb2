"""The Redis that the resolution cache (``memory.generations``) and the per-key throttle
(``accounts.throttle``) share: its client, its Lua scripts, and what happens when it fails
(docs/design.md, Cache). In core because both layers use it.

When Redis fails, callers that can do without it (cache reads, the throttle) go on
without it and skip it for ``MEMGOV_REDIS_COOLDOWN_SECONDS`` (one second by default), so
that requests do not each wait for a timeout; a change that needs it is refused instead
(``memory.generations``)."""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.commands.core import Script
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError
from redis.retry import Retry

logger = logging.getLogger(__name__)
# What an unreachable or failing Redis raises; anything else is a bug and propagates.
REDIS_DOWN: tuple[type[Exception], ...] = (RedisError, OSError)

# Process-local counters: hits, misses, bypassed (Redis skipped during a cooldown) and
# read/write/bump/hold/throttle failures. Read them in a shell or a benchmark; never reset.
stats: Counter[str] = Counter()

# The last failure: the cache settings (``CACHES["default"]``) of the server that failed,
# and when (monotonic). A cooldown is that server's: settings naming another start none.
_failed: tuple[Any, float] = (None, 0.0)


def enabled() -> bool:
    """Whether resolve caches its answers. Only in Redis: a process-local cache could not
    be invalidated by the worker's changes."""
    return bool(settings.MEMGOV_RESOLVE_CACHE and settings.CACHE_URL)


# The client for the cache settings it was made for, and its scripts by their source.
_client: tuple[Any, redis.Redis | None] = (None, None)
_scripts: dict[str, Script] = {}


def redis_client() -> redis.Redis:
    """A redis-py client (and connection pool, safe to share between threads) for the
    cache's server, made once for its settings: Django's ``CACHES["default"]`` location and
    socket timeouts. Its own pool rather than django-redis's, for its retry policy: one
    retry of a connection the server dropped (a restart), none of a timeout. redis-py's
    default retries ten times with backoff, seconds a request would wait on a Redis that
    is down."""
    global _client
    entry: dict[str, Any] = settings.CACHES["default"]
    client = _client[1]
    if _client[0] is not entry or client is None:
        options = entry.get("OPTIONS", {})
        client = redis.Redis.from_url(
            str(entry["LOCATION"]),
            socket_timeout=options.get("SOCKET_TIMEOUT"),
            socket_connect_timeout=options.get("SOCKET_CONNECT_TIMEOUT"),
            retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
        )
        _client = (entry, client)
    return client


def run_script(source: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
    """One round trip: the script by its sha1 (EVALSHA), loaded again by redis-py when the
    server answers NOSCRIPT (after a restart or a flush)."""
    client = redis_client()
    script = _scripts.get(source)
    if script is None:
        script = _scripts[source] = client.register_script(source)
    return script(keys=keys, args=args, client=client)


# A script's call: its source, its keys and its arguments.
ScriptCall = tuple[str, Sequence[str], Sequence[Any]]
_shas: dict[str, str] = {}


def _sha(source: str) -> str:
    sha = _shas.get(source)
    if sha is None:
        sha = _shas[source] = hashlib.sha1(source.encode()).hexdigest()  # noqa: S324 - Redis's script id
    return sha


def run_scripts(calls: Sequence[ScriptCall]) -> list[Any]:
    """Several scripts in one round trip: a pipeline of plain ``EVALSHA`` (a pipeline of
    redis-py's ``Script`` objects sends ``SCRIPT EXISTS`` first, a second round trip). A
    script the server does not have (NOSCRIPT, after a restart or a flush) did not run: it
    is loaded and run on its own. A script that failed otherwise is returned as its
    exception, in its place; a connection that fails raises."""
    client = redis_client()
    pipe = client.pipeline(transaction=False)
    for source, keys, args in calls:
        pipe.evalsha(_sha(source), len(keys), *keys, *args)
    results: list[Any] = pipe.execute(raise_on_error=False)
    for at, (source, keys, args) in enumerate(calls):
        if isinstance(results[at], NoScriptError):
            client.script_load(source)
            results[at] = client.evalsha(_sha(source), len(keys), *keys, *args)
    return results


def redis_usable() -> bool:
    """Redis is configured and has not failed in the last ``MEMGOV_REDIS_COOLDOWN_SECONDS``."""
    if not settings.CACHE_URL:
        return False
    server, at = _failed
    return (
        server is not settings.CACHES["default"]
        or time.monotonic() >= at + settings.MEMGOV_REDIS_COOLDOWN_SECONDS
    )


def redis_failed(what: str) -> None:
    """Count and log a failed Redis call, and start a cooldown."""
    global _failed
    stats[f"{what}_failures"] += 1
    _failed = (settings.CACHES["default"], time.monotonic())
    logger.warning(
        "Redis %s failed (%d so far in this process); going on without it",
        what,
        stats[f"{what}_failures"],
        exc_info=True,
    )


@dataclass(frozen=True)
class Prefetch:
    """A read of the cache sent early in one round trip with another script (the
    throttle's, ``accounts.throttle.admit``): its call, and what Redis answered to it (an
    exception when Redis failed). ``get_or_compute`` uses it for the same call only."""

    call: ScriptCall
    result: Any
