"""The per-key rate as a sliding-window counter in Redis: this window's count plus the
overlapping share of the previous one, read and incremented by one script, so that
concurrent requests cannot lose updates (DRF's default keeps every request's timestamp
in one cache value that each request rewrites whole).

It also remembers, per process, which tenant each API key that was throttled belongs to
(``remember_tenant``), for the web server's fair share of threads between tenants."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from accounts.keys import hash_key
from core import redis_client

if TYPE_CHECKING:
    from core.principals import Principal

# KEYS: this window's and the previous window's counters; ARGV: the previous window's
# share, the limit, the counters' lifetime (ms). A refused request counts nothing.
_SCRIPT = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')
if previous * tonumber(ARGV[1]) + current >= tonumber(ARGV[2]) then
  return {0, current, previous}
end
redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, current + 1, previous}
"""


@dataclass(frozen=True)
class Window:
    """One bucket's counters at one instant."""

    bucket: str
    limit: int
    period: int
    now: float

    @property
    def elapsed(self) -> float:
        return self.now % self.period

    @property
    def keys(self) -> list[str]:
        window = int(self.now // self.period)
        return [f"{self.bucket}:{window}", f"{self.bucket}:{window - 1}"]

    @property
    def args(self) -> list[float | int]:
        return [1 - self.elapsed / self.period, self.limit, self.period * 2000]

    def wait(self, current: int, previous: int) -> float:
        """Seconds until the previous window's share has decayed enough for one more."""
        if current >= self.limit or previous == 0:
            return self.period - self.elapsed
        return max(0.0, self.period * (1 - (self.limit - current) / previous) - self.elapsed)


def admit(window: Window) -> float | None:
    """Count a request in its window (one Redis round trip): None when it is within the
    rate, else the seconds to wait. When Redis fails (or failed moments ago), None:
    serving beats throttling."""
    return admit_with(window, None)[0]


def admit_with(
    window: Window, also: redis_client.ScriptCall | None
) -> tuple[float | None, redis_client.Prefetch | None]:
    """``admit``, with the resolution cache's read script ``also`` sent in the same round
    trip (a resolve's, issue 46), and what it read. The throttle's script runs first and
    counts as alone; the read changes nothing a refusal would have to undo."""
    if not redis_client.redis_usable():
        return None, None
    calls: list[redis_client.ScriptCall] = [(_SCRIPT, window.keys, window.args)]
    if also is not None:
        calls.append(also)
    try:
        results = redis_client.run_scripts(calls)
        if isinstance(results[0], Exception):
            raise results[0]
    except redis_client.REDIS_DOWN as exc:
        redis_client.redis_failed("throttle")
        return None, None if also is None else redis_client.Prefetch(also, exc)
    prefetched = None if also is None else redis_client.Prefetch(also, results[1])
    allowed, current, previous = results[0]
    return (None if allowed else window.wait(int(current), int(previous))), prefetched


_TENANTS_MAX = 4096
_tenant_of_key: dict[str, int] = {}


def remember_tenant(principal: Principal) -> None:
    """An authenticated key's tenant, by the key's hash (``ApiKey.key_hash``). Called from
    request threads; one dict store, atomic under the GIL."""
    remember_slug(principal.tenant.pk, getattr(principal.tenant, "slug", None))
    key = principal.api_key
    if key is None or _tenant_of_key.get(key.key_hash) == principal.tenant.pk:
        return
    if len(_tenant_of_key) >= _TENANTS_MAX:
        _tenant_of_key.clear()
    _tenant_of_key[key.key_hash] = principal.tenant.pk


_slug_of_tenant: dict[int, str] = {}


def remember_slug(tenant_id: int, slug: str | None) -> None:
    """A tenant's slug, seen where the tenant was read anyway (a key's or a session's
    principal): the request line of a refusal names it without a query of its own."""
    if slug and _slug_of_tenant.get(tenant_id) != slug:
        if len(_slug_of_tenant) >= _TENANTS_MAX:
            _slug_of_tenant.clear()
        _slug_of_tenant[tenant_id] = slug


def slug_of(tenant_id: int) -> str | None:
    return _slug_of_tenant.get(tenant_id)


def tenant_of_raw_key(raw: str) -> int | None:
    """The tenant of a raw key seen authenticated in this process, else None: a made-up or
    not yet seen key is nobody's (a key's prefix alone would let anyone who saw it in a
    list spend that tenant's share)."""
    return _tenant_of_key.get(hash_key(raw))
