"""Production URLs plus ``/floor``: a bare JSON answer of the same server, the floor the
resolve numbers are compared with (bench/README.md), and ``/floor/checks``: the floor plus
the round trip a cached resolve cannot do without, to show what is left to win."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from config.urls import handler400, handler403, handler404, handler500
from config.urls import urlpatterns as production
from memory import cache, keys


def floor(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@csrf_exempt
def floor_checks(request: HttpRequest) -> JsonResponse:
    """What a cached resolve's checks cost and nothing else (docs/architecture.md, Resolve's
    hot path): the caller's key as remembered in this process (read when it is not), and
    one call of the cache's Redis read script. No validation, no answer."""
    raw = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")[2]
    trusted = keys.api_key_on_trust(raw)
    if trusted is not None:
        tenant_id = trusted[0].tenant.pk
    else:
        found = keys.api_key_checked(raw, for_trust=True)
        if found is None:
            return JsonResponse({"status": "unknown key"}, status=401)
        tenant_id = found.tenant_id
    names = cache.generation_keys(tenant_id, "floor")
    cache.run_script("read", cache._READ, names, [1, 1, "mg:floor:", "checks"])
    return JsonResponse({"status": "ok"})


urlpatterns = [
    path("floor", floor, name="floor"),
    path("floor/checks", floor_checks, name="floor-checks"),
    *production,
]
__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]
