"""The browser-only middleware (sessions, CSRF, Django's auth, messages), skipped for a
request to the JSON API that carries an API key.

Such a request is authenticated by its key alone: ``agent_interface.auth.ApiKeyAuthentication``
comes first and answers 401 for a bad key rather than falling back to the session, so a
session cookie beside a key is never read, and a cross-site page cannot send an
``Authorization`` header without CORS, which the API does not grant: CSRF has nothing to
protect. Skipping them saves a key request about 90 µs of CPU (issue 46). Every other
middleware (security headers, CSP, the host check in ``CommonMiddleware``, the body
boundary, telemetry) runs for it as for any request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpRequest, HttpResponseBase, HttpResponseForbidden
from django.middleware.csrf import CsrfViewMiddleware

API_PREFIX = "/api/"
_Answer = HttpResponseBase | Awaitable[HttpResponseBase]  # as MiddlewareMixin types it


def is_key_request(request: HttpRequest) -> bool:
    """A request to the JSON API with ``Authorization: Bearer …``."""
    return request.path_info.startswith(API_PREFIX) and request.META.get(
        "HTTP_AUTHORIZATION", ""
    ).startswith("Bearer ")


class BrowserSessionMiddleware(SessionMiddleware):
    def __call__(self, request: HttpRequest) -> _Answer:
        if is_key_request(request):
            return self.get_response(request)
        return super().__call__(request)


class BrowserCsrfViewMiddleware(CsrfViewMiddleware):
    def __call__(self, request: HttpRequest) -> _Answer:
        if is_key_request(request):
            return self.get_response(request)
        return super().__call__(request)

    def process_view(
        self,
        request: HttpRequest,
        callback: Callable[..., Any],
        callback_args: Any,
        callback_kwargs: Any,
    ) -> HttpResponseForbidden | None:
        if is_key_request(request):
            return None
        return super().process_view(request, callback, callback_args, callback_kwargs)


class BrowserAuthenticationMiddleware(AuthenticationMiddleware):
    def __call__(self, request: HttpRequest) -> _Answer:
        if is_key_request(request):
            return self.get_response(request)
        return super().__call__(request)


class BrowserMessageMiddleware(MessageMiddleware):
    def __call__(self, request: HttpRequest) -> _Answer:
        if is_key_request(request):
            return self.get_response(request)
        return super().__call__(request)
