"""Resolution cache with generations (DESIGN.md, Cache).

An entry's key names the tenant, the subject, the Redis server's boot (``run_id``), the
subject's generation, the tenant's policy generation, and a digest of the caller's labels,
the context, the fields and ``explain``. One Lua call reads both generations and the entry
(one round trip, before the database is read); writers bump a generation with an atomic
INCR after commit and before the request returns. A slow reader can therefore only write
under a generation no one reads again.

- Activation, retirement, expiry, revocation, corrections and rejections bump the subject
  (``invalidate_subject_on_commit``); publishing a policy bumps the tenant's policy
  generation (``invalidate_policy_on_commit``) instead of the key carrying the version
  number, so a cached hit needs no policy query. The answer still names the version.
- A missing generation (new, expired, evicted, or Redis emptied) starts from a random
  62-bit value, and the key carries the server's ``run_id``: after Redis is emptied,
  restarted, or restored from a snapshot, no entry written before can be read again.
- Only answers for "now" (no ``valid_at``/``known_at``) are cached, and an entry ends at
  the next expiry or validity bound of its candidates, or after ``MAX_ENTRY_SECONDS``.
- When Redis fails, resolve reads the database (correct, slower; logged and counted in
  ``stats``) and skips Redis for ``COOLDOWN_SECONDS`` so requests do not each wait for a
  timeout. A change is refused instead (below); a release that failed after a commit is
  retried before this process next uses Redis.
- Fail-closed: a change holds its generations in Redis before it commits
  (``_bump_on_commit``): they move on at once, and readers do not store answers under a
  held generation; after commit they move on again and the hold ends. A change whose hold
  cannot reach Redis is refused (``CacheUnavailable``, 503, nothing committed), so no node
  can go on serving an answer the change ended. A process that dies between commit and
  release leaves no readable stale entry: nothing was stored under the held generation,
  and the hold ends by itself after ``HOLD_SECONDS``. A cached resolve therefore reads no
  SQL at all.

The per-key throttle (``memory.auth``, ``memory.ratelimit``) uses the same Redis helpers
and cooldown; on resolve's hot path the read's own script counts it (``ReadAlong``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import secrets
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_redis import get_redis_connection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

import config.metrics as metrics
from core.errors import CacheUnavailable
from memory import ratelimit

logger = logging.getLogger(__name__)
# What an unreachable or failing Redis raises; anything else is a bug and propagates.
REDIS_DOWN: tuple[type[Exception], ...] = (RedisError, OSError)

MAX_ENTRY_SECONDS = 60
GENERATION_SECONDS = 24 * 3600
COOLDOWN_SECONDS = 1.0
# How long a change's hold on its generations lasts at most (its transaction's commit and
# release normally end it within milliseconds; a dead process's ends by itself).
HOLD_SECONDS = 30

# Process-local counters: hits, misses, bypassed (Redis skipped during a cooldown) and
# read/write/bump failures. Read them in a shell or a benchmark; they are never reset.
stats: Counter[str] = Counter()

# A generation that is missing (new, expired, evicted, or Redis was emptied) starts again
# from a random value, so it never returns to a value an old entry was written under;
# that is also why generations may expire: GENERATION_SECONDS bounds their memory.
_LIFETIME = f"local lifetime = {GENERATION_SECONDS}\n"
_GENERATION = (
    _LIFETIME
    + """
local function generation(key, start)
  local value = redis.call('GET', key)
  if value then return value end
  redis.call('SET', key, start, 'EX', lifetime)
  return start
end
local boot = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)')
"""
)

# Also whether a change holds one of the generations (it is committing now): the answer
# is then served but not stored. A hold is a sorted set of the changes' tokens, scored by
# the time each ends by itself.
_READ_FUNCTION = (
    _GENERATION
    + """
local function held(key)
  if redis.call('EXISTS', key .. ':hold') == 0 then return 0 end
  local now = redis.call('TIME')
  return redis.call('ZCOUNT', key .. ':hold', now[1] * 1000 + math.floor(now[2] / 1000), '+inf')
end
local function read()
  local key = ARGV[3] .. boot .. ':' .. generation(KEYS[1], ARGV[1]) .. ':'
    .. generation(KEYS[2], ARGV[2]) .. ':' .. ARGV[4]
  return {key, redis.call('GET', key), held(KEYS[1]) + held(KEYS[2])}
end
"""
)
_READ = _READ_FUNCTION + "return read()\n"
# The caller's rate first (its own keys and arguments follow the read's), then the read.
_ADMIT_THEN_READ = """
local verdict = admitted(KEYS[3], KEYS[4], ARGV[5], ARGV[6], ARGV[7])
if verdict[1] == 0 then return verdict end
local found = read()
return {1, found[1], found[2], found[3]}
"""
_ADMIT_AND_READ = _READ_FUNCTION + ratelimit.FUNCTION + _ADMIT_THEN_READ
# The same, for a caller whose key was taken on trust: first, that the key's generation
# is still the one it was loaded under ({2} when not: a change since, nothing counted).
_CONFIRM_ADMIT_AND_READ = (
    _READ_FUNCTION
    + ratelimit.FUNCTION
    + "if generation(KEYS[5], ARGV[8]) ~= ARGV[9] then return {2} end\n"
    + _ADMIT_THEN_READ
)
# One generation by itself (an API key's, read before its row is loaded).
_GENERATION_ONLY = _GENERATION + "return generation(KEYS[1], ARGV[1])\n"

_MOVE_ON = (
    _LIFETIME
    + """
local function move_on(key, start)
  if redis.call('EXISTS', key) == 0 then redis.call('SET', key, start, 'EX', lifetime) end
  redis.call('INCR', key)
end
"""
)
_BUMP = (
    _MOVE_ON
    + """
for i, key in ipairs(KEYS) do move_on(key, ARGV[i]) end
return #KEYS
"""
)
# Before a change commits: each generation moves on and is held by the change's token
# (ARGV[#KEYS + 1]) for at most ARGV[#KEYS + 2] ms; holds that ended are dropped.
_HOLD = (
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
# After it committed: each generation moves on again (what was read under the held one is
# not read again) and the change's hold ends.
_RELEASE = (
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
_pending: set[str] = set()  # generation keys whose bump failed; retried before next use
_skip_until = 0.0  # monotonic time until which reads skip Redis
_scripts: dict[str, Any] = {}


def enabled() -> bool:
    """A process-local cache cannot be invalidated from the worker: only Redis is used."""
    return bool(settings.MEMGOV_RESOLVE_CACHE and settings.CACHE_URL)


def subject_generation_key(tenant_id: int, subject_id: str) -> str:
    return f"mg:gen:{tenant_id}:{subject_id}"


def policy_generation_key(tenant_id: int) -> str:
    return f"mg:gen:{tenant_id}"


def key_generation_key(prefix: str) -> str:
    """An API key's generation (by its lookup prefix): moved on by every change of its row,
    so a process that remembers the key knows from the cache's own read whether the row
    it remembers is still the current one (``memory.keys``)."""
    return f"mg:key:{prefix}"


class KeyUnconfirmed(Exception):
    """A key taken on trust of its generation could not be confirmed: the generation moved
    on since it was loaded, or Redis could not be asked. Nothing was counted or read."""


# Fresh starts need not be secret, only unlikely to repeat: a generator seeded from the
# system (again in a forked child) rather than a system call, which releases the GIL, for
# each of the three a cached resolve sends.
_starts = random.Random()  # noqa: S311 - not a secret
os.register_at_fork(after_in_child=_starts.seed)


def _fresh_start() -> int:
    return _starts.getrandbits(62)


_client: tuple[Any, Any] = (None, None)  # the cache settings it was made for, the client


def _redis() -> Any:
    """django-redis's client of the cache, made once for its settings: looking it up is a
    thread-local cache handler's, more than a resolve's own work on its hot path. The client
    and its pool are safe to share between threads."""
    global _client
    entry = settings.CACHES["default"]
    if _client[0] is not entry:
        _client = (entry, get_redis_connection("default"))
    return _client[1]


class _Incomplete(Exception):
    """The reply read so far ends before the reply does."""


def _parsed(data: bytes, at: int) -> tuple[Any, int]:
    """One reply of Redis's protocol (RESP2 or RESP3, the types a script can answer) from
    ``data`` at ``at``, and where it ends. An error reply is raised as redis-py raises it;
    ``_Incomplete`` when more is still to come."""
    end = data.find(b"\r\n", at)
    if end < 0:
        raise _Incomplete
    kind, line, at = data[at], data[at + 1 : end], end + 2
    if kind == 36:  # $ bulk string
        size = int(line)
        if size < 0:
            return None, at
        if len(data) < at + size + 2:
            raise _Incomplete
        return data[at : at + size], at + size + 2
    if kind == 42:  # * array
        items = []
        for _ in range(int(line)):
            item, at = _parsed(data, at)
            items.append(item)
        return items, at
    if kind == 58:  # : integer
        return int(line), at
    if kind == 95:  # _ null (RESP3)
        return None, at
    if kind == 43:  # + simple string
        return line, at
    if kind == 45:  # - error
        message = line.decode(errors="replace")
        if message.startswith("NOSCRIPT"):
            raise NoScriptError(message)
        raise ResponseError(message)
    raise ResponseError(f"unexpected reply type {chr(kind)!r} from Redis")


@dataclass(eq=False)
class _Kept:
    """A connection kept for the scripts, spoken to on its socket: redis-py connects it
    (address, TLS, AUTH, SELECT, protocol), then one command is one ``sendall`` and its
    reply as few ``recv`` calls as it takes. On a plain socket the timeouts are the
    kernel's (``SO_RCVTIMEO``/``SO_SNDTIMEO``), so a round trip is two system calls, not
    four (Python's own timeout polls before each): each one lets another thread of the
    server take the GIL, which cost more under load than the call itself."""

    connection: Any
    pool: Any  # whose server it talks to, and whose free list it goes back to
    proven: bool = False  # it answered before: a failure may be the server's restart since
    sock: Any = None

    def send(self, command: bytes) -> None:
        if self.sock is None:
            self.connection.connect()
            self.sock = _blocking_with_kernel_timeouts(self.connection)
        with _as_redis_errors("writing to"):
            self.sock.sendall(command)

    def reply(self) -> Any:
        data = b""
        while True:
            with _as_redis_errors("reading from"):
                chunk = self.sock.recv(65536)
            if not chunk:
                raise RedisConnectionError("Redis closed the connection")
            data += chunk
            try:
                value, end = _parsed(data, 0)
            except _Incomplete:
                continue
            if end != len(data):  # more than one reply: the connection is out of step
                raise RedisConnectionError("Redis sent more than the reply")
            return value

    def close(self) -> None:
        self.sock = None
        self.connection.disconnect()


@contextmanager
def _as_redis_errors(doing: str) -> Iterator[None]:
    """A socket's failures as redis-py's: a closed connection, or a timeout (the kernel's
    ``EAGAIN`` on a blocking socket, Python's ``TimeoutError`` on a TLS one)."""
    try:
        yield
    except (BrokenPipeError, ConnectionResetError) as exc:
        raise RedisConnectionError(f"Redis closed the connection: {exc}") from exc
    except (BlockingIOError, TimeoutError) as exc:
        raise RedisTimeoutError(f"Timeout {doing} Redis") from exc


def _blocking_with_kernel_timeouts(connection: Any) -> Any:
    """The connected socket; a plain one made blocking, its redis-py timeout set in the
    kernel instead. A TLS socket keeps Python's timeout (its reads are the library's), and
    so does one whose system takes no ``timeval`` for these options."""
    sock = connection._sock  # redis-py's connected socket (every cache test goes through it)
    timeout = connection.socket_timeout
    if type(sock) is socket.socket and timeout:
        seconds, fraction = divmod(float(timeout), 1)
        interval = struct.pack("ll", int(seconds), int(fraction * 1_000_000))
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, interval)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, interval)
        except OSError:
            return sock
        sock.settimeout(None)
    return sock


class _KeptConnections:
    """Redis connections for the scripts, kept out of redis-py's pool between uses: taking
    a connection from redis-py's pool and giving it back (a lock, a check that nothing is
    left unread, the retry wrapper) cost more client CPU than the script's own round trip.

    Free lists for the process, not one connection per thread: under ASGI every request
    runs in a thread of its own, so a thread's connection would be one per request. A use
    takes a free connection (or opens one) and gives it back; one that failed, or whose
    reply may be left unread, is closed instead. One list per redis-py pool: threads that
    raced to create django-redis's client can hold two pools of one server, and a single
    list would close one pool's connections whenever the other's thread came by. Opened
    outside the pool's count: ``max_connections`` stays the pool's own. Per process: a
    forked child neither uses nor closes its parent's sockets (``after_fork``)."""

    MAX_FREE = 32
    MAX_POOLS = 8  # pools of servers no longer configured (tests) are let go past this

    def __init__(self) -> None:
        self.free: dict[Any, list[_Kept]] = {}

    def take(self, pool: Any) -> _Kept:
        free = self.free.get(pool)
        if free is None:
            if len(self.free) >= self.MAX_POOLS:
                self._let_go()
            free = self.free.setdefault(pool, [])
        try:
            return free.pop()
        except IndexError:
            return _Kept(pool.connection_class(**pool.connection_kwargs), pool)

    def give_back(self, kept: _Kept, *, clean: bool) -> None:
        free = self.free.get(kept.pool)
        if clean and free is not None and len(free) < self.MAX_FREE:
            kept.proven = True
            free.append(kept)
        else:
            kept.close()

    def after_fork(self) -> None:
        """In a forked child: the parent's connections are the parent's (not closed here,
        which would shut them for the parent too)."""
        self.free = {}

    def _let_go(self) -> None:
        lists, self.free = list(self.free.values()), {}
        for kept in (kept for free in lists for kept in free):
            kept.close()


_kept = _KeptConnections()
os.register_at_fork(after_in_child=lambda: _kept.after_fork())


def run_script(name: str, source: str, keys: list[str], args: list[Any]) -> Any:
    """One round trip: the script is sent by sha1 (EVALSHA) on a kept connection, and
    loaded again when the server answers NOSCRIPT (after a restart or a flush). A kept
    connection the server closed since its last use (a restart) is replaced, as
    redis-py's own retry would."""
    client = _redis()
    script = _script(client, name, source)
    while True:
        kept = _kept.take(client.connection_pool)
        clean = False
        try:
            reply = _evalsha(client, kept, script, keys, args)
            clean = True
            return reply
        except RedisConnectionError:
            if not kept.proven:
                raise
        finally:
            _kept.give_back(kept, clean=clean)


def _evalsha(client: Any, kept: _Kept, script: Any, keys: list[str], args: list[Any]) -> Any:
    command = _packed("EVALSHA", script.sha, len(keys), *keys, *args)
    kept.send(command)
    try:
        return kept.reply()
    except NoScriptError:  # its reply was read: the connection is clean
        client.script_load(script.script)
        kept.send(command)
        return kept.reply()


def _packed(*parts: str | bytes | int | float) -> bytes:
    """One command in Redis's protocol, identical to redis-py's packing of the same
    arguments (a test compares them) in 3.6 µs instead of 8.7 for a resolve's script:
    its arguments here are only text, bytes and numbers."""
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        out.append(b"$%d\r\n%b\r\n" % (len(data), data))
    return b"".join(out)


def _script(client: Any, name: str, source: str) -> Any:
    script = _scripts.get(name)
    if script is None:
        script = _scripts[name] = client.register_script(source)
    return script


def redis_usable() -> bool:
    """Redis is configured and has not failed in the last ``COOLDOWN_SECONDS``: callers
    that can do without it (cache reads, the throttle) skip it rather than each waiting
    for a connection timeout."""
    return bool(settings.CACHE_URL) and time.monotonic() >= _skip_until


def redis_failed(what: str) -> None:
    """Count and log a failed Redis call, and start a cooldown."""
    global _skip_until
    stats[f"{what}_failures"] += 1
    _skip_until = time.monotonic() + COOLDOWN_SECONDS
    logger.warning(
        "Redis %s failed (%d so far in this process); going on without it",
        what,
        stats[f"{what}_failures"],
        exc_info=True,
    )


def admit(window: ratelimit.Window) -> float | None:
    """Count a request in its rate window: None when it is within the rate, else the
    seconds to wait. When Redis fails (or failed moments ago), None: serving beats
    throttling."""
    if not redis_usable():
        return None
    try:
        reply = run_script("throttle", ratelimit.SCRIPT, window.keys, window.args)
    except REDIS_DOWN:
        redis_failed("throttle")
        return None
    return window.refused(reply)


@contextmanager
def admitting(window: ratelimit.Window) -> Iterator[None]:
    """``admit`` with its round trip in flight while the block runs (a cold resolve's
    candidate statement): the script is sent before the block and its verdict read after
    it, ``RateExceeded`` then. As with ``admit``, a failing Redis lets the request in."""
    sent = _send_admission(window) if redis_usable() else None
    if sent is None:
        yield
        return
    verdict = None
    try:
        yield
    finally:  # read even when the block failed, so the connection goes back clean
        verdict = _admission_verdict(sent, window)
    if verdict is not None:
        raise ratelimit.RateExceeded(verdict)


def _send_admission(window: ratelimit.Window) -> _Kept | None:
    """A kept connection with the rate script sent on it; None when Redis failed."""
    client = _redis()
    kept = _kept.take(client.connection_pool)
    try:
        script = _script(client, "throttle", ratelimit.SCRIPT)
        kept.send(_packed("EVALSHA", script.sha, 2, *window.keys, *window.args))
    except REDIS_DOWN:
        _kept.give_back(kept, clean=False)
        redis_failed("throttle")
        return None
    return kept


def _admission_verdict(kept: _Kept, window: ratelimit.Window) -> float | None:
    """The seconds to wait, or None when the request is in (or Redis failed); the kept
    connection is given back. After a Redis restart (NOSCRIPT) the script is loaded and
    run again, as ``run_script`` does."""
    clean, reply = False, None
    try:
        reply = kept.reply()
        clean = True
    except NoScriptError:
        clean = True
    except REDIS_DOWN:
        redis_failed("throttle")
        return None
    finally:
        _kept.give_back(kept, clean=clean)
    return admit(window) if reply is None else window.refused(reply)


def _bump_keys(keys: Iterable[str]) -> None:
    """INCR each generation (creating it at a random start); raises when Redis fails."""
    keys = sorted(keys)
    if keys:
        run_script("bump", _BUMP, keys, [_fresh_start() for _ in keys])


def _flush_pending() -> None:
    """Bumps that failed earlier happen before this process trusts Redis again."""
    with _lock:
        keys = set(_pending)
    if keys:
        _bump_keys(keys)
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
        _flush_pending()
        _bump_keys(keys)
    except REDIS_DOWN:
        with _lock:
            _pending.update(keys)
        redis_failed("bump")


def _bump_on_commit(keys: set[str]) -> None:
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
        _flush_pending()
        run_script("hold", _HOLD, names, [*starts, token, HOLD_SECONDS * 1000])
    except REDIS_DOWN as exc:
        redis_failed("hold")
        raise CacheUnavailable(
            "The resolution cache cannot be reached, so this change could not end the "
            "answers cached before it; nothing was changed. Try again shortly."
        ) from exc
    transaction.on_commit(lambda: _release(names, token))


def _release(names: list[str], token: str) -> None:
    try:
        run_script("release", _RELEASE, names, [*(_fresh_start() for _ in names), token])
    except REDIS_DOWN:
        # The hold ends by itself; the generations still move on before this process
        # next uses Redis, so nothing read under the held ones is read again.
        with _lock:
            _pending.update(names)
        redis_failed("bump")


def invalidate_subject_on_commit(pairs: Iterable[tuple[int, str | None]]) -> None:
    """When the caller's transaction commits, answers about these (tenant id, subject id)
    pairs are no longer served from the cache, on any node."""
    _bump_on_commit({subject_generation_key(t, s) for t, s in pairs if s is not None})


def invalidate_policy_on_commit(tenant_id: int) -> None:
    """A new policy version: every cached answer of the tenant is stale."""
    _bump_on_commit({policy_generation_key(tenant_id)})


def generation_keys(tenant_id: int, subject_id: str) -> list[str]:
    """The generations an answer about the subject is cached under, in the order the
    entry's key names them."""
    return [subject_generation_key(tenant_id, subject_id), policy_generation_key(tenant_id)]


@dataclass(frozen=True)
class ReadAlong:
    """What resolve's hot path hands the cache so that it makes no round trip of its own
    for them: the caller's rate window, counted by the read's own script, and, for a key
    taken on trust, its generation as loaded (key prefix, value), confirmed by the same
    script (``KeyUnconfirmed`` otherwise)."""

    window: ratelimit.Window | None = None
    key_generation: tuple[str, str] | None = None


def key_generation(prefix: str) -> str | None:
    """The current generation of the key with this prefix (started when missing), or None
    when Redis cannot be asked now."""
    if not redis_usable():
        return None
    try:
        value = run_script(
            "generation", _GENERATION_ONLY, [key_generation_key(prefix)], [_fresh_start()]
        )
    except REDIS_DOWN:
        redis_failed("read")
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def key_changed_on_commit(prefix: str) -> None:
    """A key's row changed: processes remembering it reload it on their next request. After
    commit and best effort: a process that missed the change reloads the row within
    ``keys.REMEMBER_SECONDS`` anyway."""
    if settings.CACHE_URL:
        transaction.on_commit(lambda: bump([key_generation_key(prefix)]))


def _entry_affix(tenant_id: int, subject_id: str, shape: Mapping[str, Any]) -> tuple[str, str]:
    canonical = orjson.dumps(shape, option=orjson.OPT_SORT_KEYS)
    digest = hashlib.sha256(canonical).hexdigest()[:32]
    return f"mg:res:{tenant_id}:{subject_id}:", digest


def _read(
    tenant_id: int, subject_id: str, shape: Mapping[str, Any], along: ReadAlong
) -> tuple[str, bytes | None, bool]:
    """The entry key under the current generations, the entry if there is one, and
    whether a change holds the generations (then nothing may be stored under them).
    Raises ``RateExceeded`` when the window along is over its rate (nothing read)."""
    prefix, digest = _entry_affix(tenant_id, subject_id, shape)
    keys = generation_keys(tenant_id, subject_id)
    args = [_fresh_start(), _fresh_start(), prefix, digest]
    if along.window is None:
        key, entry, held = run_script("read", _READ, keys, args)
        return key.decode(), entry, bool(held)
    window = along.window
    keys, args = keys + window.keys, args + window.args
    if along.key_generation is None:
        reply = run_script("admit-read", _ADMIT_AND_READ, keys, args)
    else:
        prefix_of_key, loaded = along.key_generation
        keys.append(key_generation_key(prefix_of_key))
        args += [_fresh_start(), loaded]
        reply = run_script("confirm-admit-read", _CONFIRM_ADMIT_AND_READ, keys, args)
        if reply[0] == 2:
            raise KeyUnconfirmed
    if (wait := window.refused(reply[:3])) is not None:
        raise ratelimit.RateExceeded(wait)
    key, entry, held = reply[1], reply[2], reply[3]
    return key.decode(), entry, bool(held)


# What a computation hands the cache: the answer, and when it stops being true (or None).
Computed = tuple[dict[str, Any], datetime | None]


def get_or_compute(
    *,
    tenant_id: int,
    subject_id: str,
    shape: Mapping[str, Any],
    compute: Callable[[], Computed],
    along: ReadAlong | None = None,
) -> dict[str, Any] | bytes:
    """The cached answer about one subject for ``shape`` (everything else the answer
    depends on: labels, context, …) as it was stored (JSON), or ``compute()``'s body,
    stored until its end of truth. A window ``along`` is counted whenever Redis is used
    (``RateExceeded`` when over): by the read's script, or, with the cache off here, while
    ``compute`` runs (``admitting``); not when Redis failed (the throttle then lets all
    in)."""
    along = along or ReadAlong()
    if not enabled():
        metrics.resolve_cache_outcome("disabled")
        if along.window is None:
            return compute()[0]
        with admitting(along.window):  # counted while the answer's statement runs
            return compute()[0]
    if not redis_usable():
        if along.key_generation is not None:
            raise KeyUnconfirmed
        stats["bypassed"] += 1
        metrics.resolve_cache_outcome("bypassed")
        return compute()[0]
    try:
        _flush_pending()
        key, entry, held = _read(tenant_id, subject_id, shape, along)
    except REDIS_DOWN as exc:
        redis_failed("read")
        if along.key_generation is not None:
            raise KeyUnconfirmed from exc
        metrics.resolve_cache_outcome("error")
        return compute()[0]
    if entry is not None:
        stats["hits"] += 1
        metrics.resolve_cache_outcome("hit")
        return entry
    stats["misses"] += 1
    metrics.resolve_cache_outcome("miss")
    body, next_change = compute()
    if held:
        stats["held"] += 1
    else:
        _store(key, body, next_change)
    return body


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
        stats["uncacheable"] += 1
        return
    try:
        # An absolute end (PXAT, whole milliseconds rounded down): the entry is gone at the
        # boundary however long this write took to reach Redis.
        _redis().set(key, payload, pxat=int(until.timestamp() * 1000))
    except REDIS_DOWN:
        redis_failed("write")
