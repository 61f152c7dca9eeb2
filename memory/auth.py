"""DRF authentication, permission and throttling for tenant principals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from rest_framework import authentication, exceptions, permissions, throttling
from rest_framework.request import Request

from core.principals import Principal, principal_for_key, principal_for_user
from memory import cache
from memory.keys import api_key_for_raw

if TYPE_CHECKING:  # DRF imports its settings (and so this module) while loading views
    from rest_framework.views import APIView


class AgentUser:
    """What ``request.user`` is for an agent key: authenticated, but never a person."""

    is_authenticated = True
    is_active = True
    is_staff = False
    is_superuser = False
    pk = None

    def __init__(self, name: str) -> None:
        self.username = name

    def __str__(self) -> str:
        return self.username


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Any, Principal] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme != self.keyword or not raw.strip():
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <key>'.")
        key = api_key_for_raw(raw.strip())
        if key is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked API key.")
        principal = principal_for_key(key)
        return (principal.user or AgentUser(principal.name)), principal

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


def get_principal(request: Request) -> Principal:
    """The caller, whether it came with an API key or a dashboard session."""
    if isinstance(request.auth, Principal):
        return request.auth
    user = request.user
    principal = principal_for_user(user) if user is not None and user.is_authenticated else None
    if principal is None:
        raise exceptions.NotAuthenticated("Authentication credentials were not provided.")
    request.auth = principal
    return principal


class IsTenantPrincipal(permissions.BasePermission):
    def has_permission(self, request: Request, view: APIView) -> bool:
        get_principal(request)
        return True


# Sliding-window counter: this window's count plus the overlapping share of the previous
# one. Read and incremented atomically, so concurrent requests cannot lose updates.
_SLIDING_WINDOW = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')
if previous * tonumber(ARGV[1]) + current >= tonumber(ARGV[2]) then
  return {0, current, previous}
end
redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, current + 1, previous}
"""


def _until_allowed(limit: int, period: int, current: int, previous: int, elapsed: float) -> float:
    """Seconds until the previous window's share has decayed enough for one more request."""
    if current >= limit or previous == 0:
        return period - elapsed
    return max(0.0, period * (1 - (limit - current) / previous) - elapsed)


class PrincipalRateThrottle(throttling.SimpleRateThrottle):
    """One bucket per API key (or per person for sessions).

    With Redis it is a sliding-window counter, one round trip per request. DRF's default
    keeps every request's timestamp in one cache value that each request reads and writes
    back whole (up to ``num_requests`` floats each way, and concurrent requests overwrite
    each other's entries, letting more through than the rate). Without Redis (a single
    process on the local-memory cache) DRF's default is kept."""

    scope = "principal"
    _retry_after: float | None = None

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        principal = request.auth if isinstance(request.auth, Principal) else None
        if principal is None:
            return None
        ident = f"key{principal.api_key.pk}" if principal.api_key else principal.name
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def allow_request(self, request: Request, view: APIView) -> bool:
        if not settings.REDIS_URL:
            return super().allow_request(request, view)
        if not cache.redis_usable():
            return True  # Redis failed moments ago: serving beats throttling
        self.key = self.get_cache_key(request, view)
        limit, period = self.parse_rate(self.rate)
        if self.key is None or limit is None or period is None:
            return True
        window, elapsed = divmod(self.timer(), period)
        try:
            allowed, current, previous = cache.run_script(
                "throttle",
                _SLIDING_WINDOW,
                [f"{self.key}:{int(window)}", f"{self.key}:{int(window) - 1}"],
                [1 - elapsed / period, limit, period * 2000],
            )
        except cache.REDIS_DOWN:  # the cache is down: serving beats throttling
            cache.redis_failed("throttle")
            return True
        if not allowed:
            self._retry_after = _until_allowed(limit, period, int(current), int(previous), elapsed)
        return bool(allowed)

    def wait(self) -> float | None:
        if self._retry_after is not None:
            return self._retry_after
        return super().wait()


@dataclass(frozen=True)
class _Caller:
    """All a throttle reads of a request: who calls (its ``auth``)."""

    auth: Principal


def throttle_wait(principal: Principal) -> float | None:
    """For callers outside DRF (the MCP tools): None when this call may proceed, else the
    seconds to wait. The same throttle and bucket as the REST API, so a key's calls count
    once whichever surface they come through."""
    throttle = PrincipalRateThrottle()
    if throttle.allow_request(cast("Request", _Caller(principal)), cast("APIView", None)):
        return None
    return max(throttle.wait() or 1.0, 0.001)
