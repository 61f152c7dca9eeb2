"""Browser-facing hardening (issue 11, point 9; issue 47, point 7): the
Content-Security-Policy, and a warning when requests come through a proxy nobody trusted
(the sign-in throttle, ``accounts.sign_in``, would count every client as the proxy).

CSP: the dashboard loads only its own static files (htmx, one stylesheet) and has no inline
script or style, so ``'self'`` is the whole policy. The API docs pages load Swagger UI and
ReDoc from our own static files (drf-spectacular-sidecar), so they work offline and need no
CDN; Swagger UI's init script is a file (``SpectacularSwaggerSplitView``) and ReDoc's page has
no script of its own. ReDoc's renderer writes its styles into ``<style>`` elements at run
time (styled-components), which needs ``'unsafe-inline'`` for styles — on that page only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

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


class UntrustedProxyWarningMiddleware:
    """Says once per process that requests come through a proxy nobody trusted: with
    ``TRUSTED_PROXIES=0`` and an ``X-Forwarded-For`` header every client has the proxy's
    address, so five failed sign-ins lock a username out for all of them (issue 47,
    point 7). Only a warning: the header alone cannot prove a proxy stands in front.
    Once per middleware instance: a process has one, in Django's handler."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.header = "HTTP_" + settings.CLIENT_IP_HEADER.upper().replace("-", "_")
        self.warned = False

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not self.warned and settings.TRUSTED_PROXIES <= 0 and request.META.get(self.header):
            self.warned = True
            logger.warning(
                "requests arrive through a proxy (%s present) but MEMGOV_TRUSTED_PROXIES=0: "
                "every client counts as the proxy's address %s, so one client's failed "
                "sign-ins lock a username out for all; set MEMGOV_TRUSTED_PROXIES to the "
                "number of proxies in front (docs/operations.md, Behind a proxy)",
                settings.CLIENT_IP_HEADER,
                request.META.get("REMOTE_ADDR", ""),
            )
        return self.get_response(request)
