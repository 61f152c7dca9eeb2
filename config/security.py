"""Browser-facing hardening (issue 11, point 9): sign-in throttling and the
Content-Security-Policy.

Sign-in: after ``LOGIN_FAILURE_LIMIT`` failed attempts for one username from one address
within ``LOGIN_FAILURE_WINDOW_SECONDS``, that pair is refused — even with the right
password — until the window ends. Counting per username *and* address means an attacker
cannot lock a reviewer out from everywhere, and one address cannot try many passwords for
one account. The counter lives in the shared cache, so every web node sees it.

CSP: the dashboard loads only its own static files (htmx, one stylesheet) and has no inline
script or style, so ``'self'`` is the whole policy. The API docs pages load Swagger UI and
ReDoc from our own static files (drf-spectacular-sidecar), so they work offline and need no
CDN; Swagger UI's init script is a file (``SpectacularSwaggerSplitView``) and ReDoc's page has
no script of its own. ReDoc's renderer writes its styles into ``<style>`` elements at run
time (styled-components), which needs ``'unsafe-inline'`` for styles — on that page only.
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
_REDOC = {**_SELF_ONLY, "style-src": "'self' 'unsafe-inline'", "worker-src": "'self' blob:"}


def _policy(directives: dict[str, str]) -> str:
    return "; ".join(f"{name} {value}" for name, value in directives.items())


SELF_ONLY_POLICY = _policy(_SELF_ONLY)
REDOC_POLICY = _policy(_REDOC)


class ContentSecurityPolicyMiddleware:
    """Adds the policy to every response that does not set its own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            redoc = request.path.startswith("/api/redoc/")
            response["Content-Security-Policy"] = REDOC_POLICY if redoc else SELF_ONLY_POLICY
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
