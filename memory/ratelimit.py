"""The per-key rate as a sliding-window counter in Redis: this window's count plus the
overlapping share of the previous one, read and incremented atomically so that
concurrent requests cannot lose updates (``memory.auth.PrincipalRateThrottle``).

The counter is a Lua function so that it runs alone (``SCRIPT``) or at the start of the
resolution cache's read (``memory.cache``): resolve's hot path then pays one Redis round
trip for both.

It also remembers, per process, which tenant each API key that passed the throttle
belongs to (``remember_tenant``): the web server reads it before a request has a thread
(``config.tenant_share``), where no query can run."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.principals import Principal

# A refused request counts nothing: passed on to another path, it is not counted twice.
FUNCTION = """
local function admitted(this_window, last_window, share, limit, ttl_ms)
  local current = tonumber(redis.call('GET', this_window) or '0')
  local previous = tonumber(redis.call('GET', last_window) or '0')
  if previous * tonumber(share) + current >= tonumber(limit) then
    return {0, current, previous}
  end
  redis.call('INCR', this_window)
  redis.call('PEXPIRE', this_window, ttl_ms)
  return {1, current + 1, previous}
end
"""
SCRIPT = FUNCTION + "return admitted(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3])\n"


@dataclass(frozen=True)
class Window:
    """One bucket's counters at one instant: the script's keys and arguments."""

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

    def refused(self, reply: list[Any]) -> float | None:
        """What ``admitted`` answered: None when the request is in, else the seconds to
        wait."""
        allowed, current, previous = reply
        return None if allowed else self.wait(int(current), int(previous))

    def wait(self, current: int, previous: int) -> float:
        """Seconds until the previous window's share has decayed enough for one more."""
        if current >= self.limit or previous == 0:
            return self.period - self.elapsed
        return max(0.0, self.period * (1 - (self.limit - current) / previous) - self.elapsed)


class RateExceeded(Exception):
    """The caller is over its rate; ``wait`` seconds until its next request is allowed."""

    def __init__(self, wait: float) -> None:
        super().__init__(f"over the rate: retry in {wait:.1f}s")
        self.wait = wait


_TENANTS_MAX = 4096
_tenant_of_key: dict[str, int] = {}


def remember_tenant(principal: Principal) -> None:
    """An authenticated key's tenant, by the key's hash (``ApiKey.key_hash``). Called from
    request threads; one dict store, atomic under the GIL."""
    key = principal.api_key
    if key is None or _tenant_of_key.get(key.key_hash) == principal.tenant.pk:
        return
    if len(_tenant_of_key) >= _TENANTS_MAX:
        _tenant_of_key.clear()
    _tenant_of_key[key.key_hash] = principal.tenant.pk


def tenant_of_raw_key(raw: str) -> int | None:
    """The tenant of a raw key seen authenticated in this process, else None: a made-up or
    not yet seen key is nobody's (a key's prefix alone would let anyone who saw it in a
    list spend that tenant's share)."""
    return _tenant_of_key.get(hashlib.sha256(raw.encode("utf-8")).hexdigest())
