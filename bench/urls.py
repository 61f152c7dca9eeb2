"""Production URLs plus ``/floor``: a bare JSON answer of the same server, the floor the
resolve numbers are compared with (bench/README.md), and ``/floor/checks``: the floor plus
the round trips a cached resolve cannot do without, to show what is left to win."""

from __future__ import annotations

import time

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from accounts import keys, throttle
from config.urls import handler400, handler403, handler404, handler500
from config.urls import urlpatterns as production
from memory import generations


def floor(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@csrf_exempt
def floor_checks(request: HttpRequest) -> JsonResponse:
    """The governed floor (issue 46): the minimum any authenticated, throttled, cached read
    must do on this stack, and nothing else: the caller's key read from the database, and
    the throttle's Redis script with the cache's read script in one round trip, as a
    resolve sends them (``accounts.throttle.admit_with``). No validation, no answer."""
    raw = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")[2]
    key = keys.api_key_for_raw(raw)
    if key is None:
        return JsonResponse({"status": "unknown key"}, status=401)
    window = throttle.Window(bucket=f"mg:floor:{key.pk}", limit=10**9, period=60, now=time.time())
    throttle.admit_with(window, generations.read_call(key.tenant_id, "floor", {"floor": "checks"}))
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("floor", floor, name="floor"),
    path("floor/checks", floor_checks, name="floor-checks"),
    *production,
]
__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]
