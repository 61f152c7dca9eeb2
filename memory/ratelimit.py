"""The per-key rate as a sliding-window counter in Redis: this window's count plus the
overlapping share of the previous one, read and incremented atomically so that
concurrent requests cannot lose updates (``memory.auth.PrincipalRateThrottle``).

The counter is a Lua function so that it runs alone (``SCRIPT``) or at the start of the
resolution cache's read (``memory.cache``): resolve's hot path then pays one Redis round
trip for both."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
