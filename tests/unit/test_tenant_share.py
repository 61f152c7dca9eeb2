"""Issue 33, point 13: how a web process hands its request threads out between tenants
(``config.tenant_share``), step by step on one event loop."""

from __future__ import annotations

import asyncio
import hashlib
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

from config.tenant_share import UNVERIFIED, TenantShare, tenant_of
from memory import throttle


def _threads(count: int) -> list[ThreadPoolExecutor]:
    return [ThreadPoolExecutor(max_workers=1) for _ in range(count)]


async def _settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


def test_another_tenants_request_takes_the_next_free_thread_before_the_busy_tenants_queue() -> None:
    async def story() -> list[str]:
        share = TenantShare(_threads(1), max_in_flight=0)
        served: list[str] = []
        held = await share.acquire("acme")

        async def one(tenant: str, name: str) -> None:
            executor = await share.acquire(tenant)
            served.append(name)
            await asyncio.sleep(0)
            share.release(tenant, executor)

        waiting = [asyncio.create_task(one("acme", f"acme-{n}")) for n in range(3)]
        await _settle()
        waiting.append(asyncio.create_task(one("globex", "globex")))
        await _settle()
        share.release("acme", held)
        await asyncio.gather(*waiting)
        return served

    assert asyncio.run(story()) == ["globex", "acme-0", "acme-1", "acme-2"]


def test_a_tenant_at_its_limit_is_refused_and_the_others_are_not() -> None:
    async def story() -> tuple[bool, bool, bool, bool]:
        share = TenantShare(_threads(2), max_in_flight=2)
        await share.acquire("acme")
        await share.acquire("acme")  # both threads: running
        return (
            share.admits("acme"),
            share.admits("globex"),
            share.admits(UNVERIFIED),
            share.admits(None),  # no key: the dashboard, health
        )

    assert asyncio.run(story()) == (False, True, True, True)


def test_a_request_that_leaves_while_waiting_gives_its_place_and_thread_back() -> None:
    async def story() -> tuple[bool, bool]:
        share = TenantShare(_threads(1), max_in_flight=1)
        held = await share.acquire("acme")
        gone = asyncio.create_task(share.acquire("globex"))
        await _settle()
        blocked = share.admits("globex")
        gone.cancel()
        await _settle()
        share.release("acme", held)
        return blocked, share.admits("globex") and await _acquired(share, "globex")

    assert asyncio.run(story()) == (False, True)


async def _acquired(share: TenantShare, tenant: str) -> bool:
    return bool(await asyncio.wait_for(share.acquire(tenant), timeout=1))


def test_a_request_counts_for_its_keys_tenant_only_once_that_key_has_authenticated() -> None:
    raw = "mg_0123456789ab_secret"
    key = SimpleNamespace(key_hash=hashlib.sha256(raw.encode()).hexdigest())
    principal: Any = SimpleNamespace(api_key=key, tenant=SimpleNamespace(pk=7))
    scope = {"headers": [(b"authorization", f"Bearer {raw}".encode())]}
    forged = {"headers": [(b"authorization", b"Bearer mg_0123456789ab_guessed")]}

    before = tenant_of(scope)
    throttle.remember_tenant(principal)

    assert before == UNVERIFIED
    assert tenant_of(scope) == 7
    assert tenant_of(forged) == UNVERIFIED  # the same prefix is not the same key
    assert tenant_of({"headers": [(b"cookie", b"sessionid=x")]}) is None
