"""DRF authentication, permission and throttling for tenant principals."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from rest_framework import authentication, exceptions, permissions, throttling
from rest_framework.request import Request

from memory.keys import api_key_for_raw
from memory.principals import Principal, principal_for_key, principal_for_user

if TYPE_CHECKING:  # DRF imports its settings (and so this module) while loading views
    from rest_framework.views import APIView

logger = logging.getLogger(__name__)


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


class PrincipalRateThrottle(throttling.SimpleRateThrottle):
    """One bucket per API key (or per person for sessions)."""

    scope = "principal"

    def get_cache_key(self, request: Request, view: APIView) -> str | None:
        principal = request.auth if isinstance(request.auth, Principal) else None
        if principal is None:
            return None
        ident = f"key{principal.api_key.pk}" if principal.api_key else principal.name
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def allow_request(self, request: Request, view: APIView) -> bool:
        try:
            return super().allow_request(request, view)
        except Exception:  # the cache is down: serving beats throttling
            logger.warning("throttle cache unavailable; request allowed", exc_info=True)
            return True
