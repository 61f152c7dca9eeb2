"""Refuse oversized bodies and NUL characters in URLs before anything reads them."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_plus

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from config.problems import problem_response


class BodySizeLimitMiddleware:
    """413 for a declared ``Content-Length`` over the limit; Django's own
    ``DATA_UPLOAD_MAX_MEMORY_SIZE`` check catches undeclared (chunked) bodies."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit: int = settings.MAX_REQUEST_BODY_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return problem_response(400, "Content-Length is not a number.")
        if length > limit:
            return problem_response(413, f"Request body is larger than {limit} bytes.")
        return self.get_response(request)


class NulCharacterMiddleware:
    """400 for a NUL character in the path or query string: PostgreSQL text cannot hold
    one, so it would otherwise surface as a database error (a 500) in whatever lookup
    used it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = unquote_plus(request.META.get("QUERY_STRING", ""))
        if "\x00" in request.path or "\x00" in query:
            return problem_response(400, "The URL must not contain NUL characters.")
        return self.get_response(request)
