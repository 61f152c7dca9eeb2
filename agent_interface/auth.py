"""DRF authentication, permission and throttling for tenant principals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from rest_framework import authentication, exceptions, permissions, throttling
from rest_framework.request import Request

from accounts import throttle
from accounts.keys import api_key_for_raw
from core import redis_client
from core.principals import Principal, principal_for_key, principal_for_user

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


class ReadsCacheAhead:
    """A view whose handler reads the resolution cache (resolve): the throttle sends that
    read in its own round trip to Redis and leaves what it read in ``prefetched``."""

    prefetched: redis_client.Prefetch | None = None

    def cache_read_ahead(self, request: Request) -> redis_client.ScriptCall | None:
        """The read script's call the handler will make, or None (not cacheable, or the
        request is not valid: the handler then answers it as before). Never raises."""
        return None


class PrincipalRateThrottle(throttling.SimpleRateThrottle):
    """One bucket per API key (or per person for sessions).

    With Redis it is a sliding-window counter (``accounts.throttle``): one round trip per
    request. DRF's default keeps every request's timestamp in one cache value that each
    request reads and writes back whole (up to ``num_requests`` floats each way, and
    concurrent requests overwrite each other's entries, letting more through than the
    rate). Without Redis (a single process on the local-memory cache)
    DRF's default is kept."""

    scope = "principal"
    _retry_after: float | None = None
    # Set by DRF's __init__ from the rate (the stubs do not declare them).
    num_requests: int | None
    duration: int | None

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        principal = request.auth if isinstance(request.auth, Principal) else None
        return None if principal is None else self._bucket(principal)

    def _bucket(self, principal: Principal) -> str:
        throttle.remember_tenant(principal)  # every path names the bucket: REST, MCP
        ident = f"key{principal.api_key.pk}" if principal.api_key else principal.name
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def window(self, principal: Principal) -> throttle.Window | None:
        """The caller's counters at this instant, when Redis keeps them (else None)."""
        limit, period = self.num_requests, self.duration  # parsed from the rate on creation
        if not settings.CACHE_URL or limit is None or period is None:
            return None
        bucket = self._bucket(principal)
        return throttle.Window(bucket=bucket, limit=limit, period=period, now=self.timer())

    def allow_request(self, request: Request, view: APIView) -> bool:
        if not settings.CACHE_URL:
            return super().allow_request(request, view)
        principal = request.auth if isinstance(request.auth, Principal) else None
        window = self.window(principal) if principal is not None else None
        if window is None:
            return True
        self.key = window.bucket
        if isinstance(view, ReadsCacheAhead):
            read = view.cache_read_ahead(request)
            self._retry_after, view.prefetched = throttle.admit_with(window, read)
        else:
            self._retry_after = throttle.admit(window)
        return self._retry_after is None

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
    limiter = PrincipalRateThrottle()
    if limiter.allow_request(cast("Request", _Caller(principal)), cast("APIView", None)):
        return None
    return max(limiter.wait() or 1.0, 0.001)
