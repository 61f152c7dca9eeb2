"""Refuse oversized bodies before anything reads them."""

from __future__ import annotations

from collections.abc import Callable

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
