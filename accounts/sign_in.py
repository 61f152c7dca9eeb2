"""The sign-in throttle (issue 11, point 9; issue 33, point 10).

One throttle for every password login (the dashboard's, the Django admin's and
anything else that calls ``django.contrib.auth.authenticate``), as the first
authentication backend. Two counters, both in the shared cache so every web node sees
them, both starting at a username's first failure and lasting
``LOGIN_FAILURE_WINDOW_SECONDS``:

- per (username, client address): after ``LOGIN_FAILURE_LIMIT`` failures that pair is
  refused, even with the right password, until its window ends. One address cannot try
  many passwords for one account, and it locks out nobody else.
- per username: after ``LOGIN_USERNAME_FAILURE_LIMIT`` failures from all addresses
  together (many addresses guessing one account), the username is refused from every
  address except those where it signed in during the last ``KNOWN_ADDRESS_SECONDS``:
  a distributed attacker cannot keep its owner out where the owner usually signs in.

The client address is ``REMOTE_ADDR`` unless ``TRUSTED_PROXIES`` (``MEMGOV_TRUSTED_PROXIES``)
says how many proxies stand in front: then it is the entry of ``CLIENT_IP_HEADER``
(``X-Forwarded-For``) that the outermost trusted proxy appended. Behind an ingress without
that setting every client shares the ingress's address; with it by default, any client
could name its own address.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any, Literal

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError
from django.dispatch import receiver
from django.http import HttpRequest

logger = logging.getLogger(__name__)

KNOWN_ADDRESS_SECONDS = 30 * 24 * 3600
Lock = Literal["address", "username"]


def locked_message(lock: Lock) -> str:
    """What the sign-in page says instead of "do not match" while a lock holds."""
    minutes = max(1, round(settings.LOGIN_FAILURE_WINDOW_SECONDS / 60))
    whom = "for this username from your address" if lock == "address" else "for this username"
    return f"Too many failed sign-ins {whom}. Try again in {minutes} minutes."


def client_address(request: HttpRequest) -> str:
    """The client's address as the trusted proxies report it (module docstring). A request
    with fewer entries than trusted proxies did not pass through all of them: its header
    is the client's own, so only the peer's address counts."""
    peer = str(request.META.get("REMOTE_ADDR", ""))
    trusted: int = settings.TRUSTED_PROXIES
    if trusted <= 0:
        return peer
    header = "HTTP_" + settings.CLIENT_IP_HEADER.upper().replace("-", "_")
    hops = [hop.strip() for hop in str(request.META.get(header, "")).split(",")]
    hops = [hop for hop in hops if hop]
    return hops[-trusted] if len(hops) >= trusted else peer


def _key(kind: str, *parts: str) -> str:
    return f"login-{kind}:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()


class _Attempt:
    """One sign-in attempt's counters: its username from its client address."""

    def __init__(self, request: HttpRequest, username: str) -> None:
        username = username.casefold()
        address = client_address(request)
        self.pair = _key("failures", username, address)
        self.username = _key("username-failures", username)
        self.known = _key("known", username, address)

    def lock(self) -> Lock | None:
        """Which lock refuses this attempt, if any."""
        if _count(self.pair) >= settings.LOGIN_FAILURE_LIMIT:
            return "address"
        over = _count(self.username) >= settings.LOGIN_USERNAME_FAILURE_LIMIT
        return "username" if over and not _cache_call(cache.get, self.known) else None

    def failed(self) -> None:
        window = settings.LOGIN_FAILURE_WINDOW_SECONDS
        for key in (self.pair, self.username):
            _cache_call(cache.add, key, 0, window)  # the window starts at the first failure
            _cache_call(cache.incr, key)

    def succeeded(self) -> None:
        """The pair starts afresh; the username-wide count does not (the attacker's
        failures elsewhere still count), but this address no longer falls under it."""
        _cache_call(cache.delete, self.pair)
        _cache_call(cache.set, self.known, 1, KNOWN_ADDRESS_SECONDS)


def _cache_call(call: Callable[..., Any], *args: Any) -> Any:
    """The counters are best effort: with the cache down, sign-in still works
    (unthrottled, logged) rather than failing for everyone."""
    try:
        return call(*args)
    except Exception:
        logger.warning("sign-in throttle: the cache is unavailable", exc_info=True)
        return None


def _count(key: str) -> int:
    return int(_cache_call(cache.get, key) or 0)


def _username(credentials: dict[str, Any]) -> str | None:
    username = credentials.get(get_user_model().USERNAME_FIELD)
    return username if isinstance(username, str) else None


class SignInThrottle:
    """The first authentication backend: refuses a locked attempt before any backend
    checks its password, so the right password fails too until the window ends.
    ``PermissionDenied`` stops ``authenticate`` at once; the refusal is left on the
    request (``signin_locked``) for the sign-in forms to say why. It has no ``get_user``
    (it signs nobody in): Django then never names it as the session's backend."""

    def authenticate(self, request: Any, **credentials: Any) -> None:
        username = _username(credentials)
        if not isinstance(request, HttpRequest) or username is None:
            return None  # no web request (a management command): nothing to count by
        lock = _Attempt(request, username).lock()
        if lock is not None:
            request.signin_locked = lock  # type: ignore[attr-defined]  # read by the forms
            raise PermissionDenied(locked_message(lock))
        return None


@receiver(user_login_failed, dispatch_uid="memgov-sign-in-throttle-failed")
def _count_failure(sender: Any, credentials: dict[str, Any], request: Any = None, **_: Any) -> None:
    username = _username(credentials)
    locked = getattr(request, "signin_locked", None)
    if isinstance(request, HttpRequest) and username is not None and locked is None:
        _Attempt(request, username).failed()  # a refused attempt counts nothing more


@receiver(user_logged_in, dispatch_uid="memgov-sign-in-throttle-succeeded")
def _forget_failures(sender: Any, request: Any, user: Any, **_: Any) -> None:
    if isinstance(request, HttpRequest):
        _Attempt(request, user.get_username()).succeeded()


class _SaysWhyLocked:
    """A sign-in form that answers the lock's message instead of "do not match"."""

    request: HttpRequest | None
    throttled = ""  # the message shown, for views that answer differently when locked

    def get_invalid_login_error(self) -> ValidationError:
        lock: Lock | None = getattr(self.request, "signin_locked", None)
        if lock is None:
            return super().get_invalid_login_error()  # type: ignore[misc, no-any-return]
        self.throttled = locked_message(lock)
        return ValidationError(self.throttled, code="throttled")


class ThrottledAuthenticationForm(_SaysWhyLocked, AuthenticationForm):
    """The dashboard's sign-in form."""


class ThrottledAdminAuthenticationForm(_SaysWhyLocked, AdminAuthenticationForm):
    """The Django admin's sign-in form (``admin.site.login_form``, config/urls.py)."""


class ThrottledLoginView(LoginView):
    authentication_form = ThrottledAuthenticationForm
