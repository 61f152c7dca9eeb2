"""Browser-facing hardening (issue 11, point 9): sign-in throttling and the
Content-Security-Policy.

Sign-in: after ``LOGIN_FAILURE_LIMIT`` failed attempts for one username from one address
within ``LOGIN_FAILURE_WINDOW_SECONDS``, that pair is refused — even with the right
password — until the window ends. Counting per username *and* address means an attacker
cannot lock a reviewer out from everywhere, and one address cannot try many passwords for
one account. The counter lives in the shared cache, so every web node sees it.

CSP: the dashboard loads only its own static files (htmx, one stylesheet) and has no inline
script or style, so ``'self'`` is the whole policy. The Swagger UI page is the one
exception: its assets come from the jsDelivr CDN (drf-spectacular's default), and its init
script is served as a file (``SpectacularSwaggerSplitView``), not inline.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

LOGIN_FAILURE_LIMIT = 5
LOGIN_FAILURE_WINDOW_SECONDS = 15 * 60
LOCKED_MESSAGE = (
    "Too many failed sign-ins for this username from your address. Try again in 15 minutes."
)

_SELF_ONLY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}
_CDN = "https://cdn.jsdelivr.net"
_DOCS = {**_SELF_ONLY, "script-src": f"'self' {_CDN}", "style-src": f"'self' {_CDN}"} | {
    "img-src": f"'self' data: {_CDN}"
}


def _policy(directives: dict[str, str]) -> str:
    return "; ".join(f"{name} {value}" for name, value in directives.items())


SELF_ONLY_POLICY = _policy(_SELF_ONLY)
DOCS_POLICY = _policy(_DOCS)


class ContentSecurityPolicyMiddleware:
    """Adds the policy to every response that does not set its own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            docs = request.path.startswith("/api/docs/")
            response["Content-Security-Policy"] = DOCS_POLICY if docs else SELF_ONLY_POLICY
        return response


def _failures_key(username: str, address: str) -> str:
    pair = f"{username.casefold()}\n{address}".encode()
    return "login-failures:" + hashlib.sha256(pair).hexdigest()


class ThrottledAuthenticationForm(AuthenticationForm):
    """Django's sign-in form, refused for a username and address with too many failures."""

    throttled = ""  # the message the sign-in page shows instead of "do not match"

    def clean(self) -> dict[str, Any]:
        address = self.request.META.get("REMOTE_ADDR", "") if self.request else ""
        key = _failures_key(self.cleaned_data.get("username") or "", address)
        if _failures(key) >= LOGIN_FAILURE_LIMIT:
            self.throttled = LOCKED_MESSAGE
            raise ValidationError(LOCKED_MESSAGE, code="throttled")
        try:
            cleaned = super().clean()
        except ValidationError:
            _count_failure(key)
            raise
        _cache_call(cache.delete, key)
        return cleaned


def _cache_call(call: Callable[..., Any], *args: Any) -> Any:
    """The counter is best effort: with the cache down, sign-in still works (unthrottled,
    logged) rather than failing for everyone."""
    try:
        return call(*args)
    except Exception:
        logger.warning("sign-in throttle: the cache is unavailable", exc_info=True)
        return None


def _failures(key: str) -> int:
    return int(_cache_call(cache.get, key) or 0)


def _count_failure(key: str) -> None:
    _cache_call(cache.add, key, 0, LOGIN_FAILURE_WINDOW_SECONDS)  # the window starts here
    _cache_call(cache.incr, key)


class ThrottledLoginView(LoginView):
    authentication_form = ThrottledAuthenticationForm
