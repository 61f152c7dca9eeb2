"""A web process's request threads shared fairly between tenants (issue 33, point 13).

Under ``config.asgi`` a request waits for one of ``MEMGOV_WEB_THREADS`` kept threads.
First come, first served, one agent sending many requests at once filled that queue, and
another tenant's request waited behind all of them (p50 6 -> 217 ms, within the agent's
6,000/min). Here a freed thread goes to the waiting request of the tenant that holds the
fewest threads (ties: the tenant served least recently), so another tenant waits at most
for one thread to free, however many requests the busy one has queued. It is work
conserving: alone, a tenant may use every thread.

Beyond ``TENANT_MAX_IN_FLIGHT`` requests of one tenant in this process (running or
waiting; ``MEMGOV_TENANT_MAX_IN_FLIGHT``, 0 for no limit) the next one is answered at once,
before it waits or costs a query: 429, a problem, ``Retry-After: 1``.

The tenant is that of the request's API key as this process has seen it authenticate
(``memory.throttle.remember_tenant``). A key not seen yet, or made up, counts as one
tenant of its own ("unverified") with the same limit; a request without a key (dashboard,
health, metrics) as another, never refused here. Everything here runs on the process's
event loop, so it needs no lock."""

from __future__ import annotations

import asyncio
import json
from collections import Counter, deque
from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from memory.throttle import tenant_of_raw_key

UNVERIFIED = "unverified"
RETRY_AFTER_SECONDS = 1


def tenant_of(scope: Any) -> Hashable:
    """The request's bucket: its key's tenant id, ``UNVERIFIED``, or None without a key."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, raw = value.decode("latin-1").partition(" ")
            if scheme != "Bearer" or not raw.strip():
                return UNVERIFIED
            return tenant_of_raw_key(raw.strip()) or UNVERIFIED
    return None


class TenantShare:
    """The process's kept threads, handed out fairly (module docstring)."""

    def __init__(self, executors: list[ThreadPoolExecutor], max_in_flight: int) -> None:
        self._idle = executors  # the last freed is handed first: its caches are warmest
        self._max_in_flight = max_in_flight
        self._running: Counter[Hashable] = Counter()
        self._waiting: dict[Hashable, deque[asyncio.Future[ThreadPoolExecutor]]] = {}
        self._served: dict[Hashable, int] = {}  # each tenant's last turn, for the ties
        self._turn = 0

    def admits(self, tenant: Hashable) -> bool:
        if tenant is None or self._max_in_flight <= 0:
            return True
        waiting = len(self._waiting.get(tenant, ()))
        return self._running[tenant] + waiting < self._max_in_flight

    async def acquire(self, tenant: Hashable) -> ThreadPoolExecutor:
        if self._idle and not self._waiting:
            self._serve(tenant)
            return self._idle.pop()
        handed: asyncio.Future[ThreadPoolExecutor] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(tenant, deque()).append(handed)
        try:
            return await handed
        except asyncio.CancelledError:  # the client left while it waited
            if handed.done() and not handed.cancelled():
                self.release(tenant, handed.result())  # handed just before: pass it on
            else:
                self._forget(tenant, handed)
            raise

    def release(self, tenant: Hashable, executor: ThreadPoolExecutor) -> None:
        self._running[tenant] -= 1
        if self._running[tenant] <= 0:
            del self._running[tenant]
        while self._waiting:
            next_tenant = min(self._waiting, key=self._priority)
            queue = self._waiting[next_tenant]
            handed = queue.popleft()
            if not queue:
                del self._waiting[next_tenant]
            if not handed.done():
                self._serve(next_tenant)
                handed.set_result(executor)
                return
        self._idle.append(executor)

    def _priority(self, tenant: Hashable) -> tuple[int, int]:
        """Fewest threads held first, then the tenant whose last turn is longest ago."""
        return self._running[tenant], self._served.get(tenant, -1)

    def _serve(self, tenant: Hashable) -> None:
        self._running[tenant] += 1
        self._turn += 1
        self._served[tenant] = self._turn

    def _forget(self, tenant: Hashable, handed: asyncio.Future[ThreadPoolExecutor]) -> None:
        queue = self._waiting.get(tenant)
        if queue is not None and handed in queue:
            queue.remove(handed)
            if not queue:
                del self._waiting[tenant]


async def refuse(send: Any) -> None:
    """The answer to a request over its tenant's share, sent from the event loop."""
    from config.problems import PROBLEM_CONTENT_TYPE, problem_body  # noqa: PLC0415 - DRF:
    # imported here, this module loads before Django is set up (config.asgi)

    detail = "Too many requests of your tenant at once on this server; retry in a second."
    body = json.dumps(problem_body(429, detail)).encode()
    headers = [
        (b"content-type", PROBLEM_CONTENT_TYPE.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})
