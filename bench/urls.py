"""Production URLs plus ``/floor``: a bare JSON answer of the same server, the floor the
resolve numbers are compared with (bench/README.md)."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import path

from config.urls import handler400, handler403, handler404, handler500
from config.urls import urlpatterns as production


def floor(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


urlpatterns = [path("floor", floor, name="floor"), *production]
__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]
