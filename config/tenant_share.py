"""One tenant's share of a web process's request threads (issue 33, point 13).

gunicorn's gthread worker answers ``MEMGOV_WEB_THREADS`` requests at once and queues the
rest first come, first served. One agent sending many requests at once would hold every
thread, and another tenant's request would wait behind all of its queue. Here a tenant with
``TENANT_MAX_IN_FLIGHT`` requests running in this process (by default all the threads but
one; ``MEMGOV_TENANT_MAX_IN_FLIGHT``, 0 for no cap) is answered at once for the next, before
anything reads its body or queries: 429, a problem, ``Retry-After: 1``. The thread it
cannot take serves the other tenants, and works through its queued excess at the speed of
those refusals.

The tenant is that of the request's API key as this process has seen it authenticate
(``memory.throttle.remember_tenant``). A key not seen yet, or made up, counts as one
tenant of its own ("unverified") with the same cap; a request without a key (dashboard,
health, metrics) is never refused here. The count runs from the request's start until its
view has answered (a streamed body is sent after)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Hashable

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

from config.problems import problem_response
from memory.throttle import tenant_of_raw_key

UNVERIFIED = "unverified"
RETRY_AFTER_SECONDS = 1


def tenant_of(request: HttpRequest) -> Hashable:
    """The request's bucket: its key's tenant id, ``UNVERIFIED``, or None without a key."""
    authorization = request.headers.get("Authorization")
    if authorization is None:
        return None
    scheme, _, raw = authorization.partition(" ")
    if scheme != "Bearer" or not raw.strip():
        return UNVERIFIED
    return tenant_of_raw_key(raw.strip()) or UNVERIFIED


class TenantShareMiddleware:
    """Counts each tenant's requests running in this process (module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        self.max_in_flight: int = settings.TENANT_MAX_IN_FLIGHT
        self._running: Counter[Hashable] = Counter()
        self._lock = threading.Lock()  # the process's request threads share the count

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if self.max_in_flight <= 0:
            return self.get_response(request)
        tenant = tenant_of(request)
        if tenant is None:
            return self.get_response(request)
        if not self._admit(tenant):
            return refusal()
        try:
            return self.get_response(request)
        finally:
            self._release(tenant)

    def _admit(self, tenant: Hashable) -> bool:
        with self._lock:
            if self._running[tenant] >= self.max_in_flight:
                return False
            self._running[tenant] += 1
            return True

    def _release(self, tenant: Hashable) -> None:
        with self._lock:
            self._running[tenant] -= 1
            if self._running[tenant] <= 0:
                del self._running[tenant]


def refusal() -> HttpResponseBase:
    detail = "Too many requests of your tenant at once on this server; retry in a second."
    response = problem_response(429, detail)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
