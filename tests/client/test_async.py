"""``AsyncMemgov`` tells the main story as the sync client does, and both clients offer the
same operations with the same parameters."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import httpx
import pytest

from memgov_client import AsyncMemgov, Memgov, StaleVersion
from memory.models import Entity

P9 = {"project": "P-9"}
T = TypeVar("T")


def _run(story: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` in a thread of its own: a fixture of another test module (Playwright's
    sync API) may leave an event loop running in the main thread for the whole session."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, story).result()


def test_the_async_client_runs_the_rule_story(connect_async, sleeps):
    async def story() -> None:
        async with (
            connect_async("agent") as agent,
            connect_async("rita") as rita,
            connect_async("lena") as lena,
        ):
            process = await agent.create_entity(kind="process", name="Renewal purchasing")
            record = await agent.record_source(
                kind="approval_record", content="APR-2291 v3", external_ref="APR-2291"
            )
            proposed = await agent.propose_memory(
                kind="enterprise_rule",
                subject=process["id"],
                field="material_checks",
                value="follow exception APR-2291",
                statement="Renewals of P-9 follow exception APR-2291.",
                scope=P9,
                owner="rita",
                expires_at="2099-01-01T00:00:00Z",
                sources=[record["id"]],
            )
            await rita.approve(proposed["id"])
            active = await lena.approve(proposed["id"])
            resolved = await agent.resolve(process["id"], context=P9, task_id="renewal-9")
            listed = [m["id"] async for m in agent.iter_memories(subject=process["id"])]
            await agent.correct_memory(proposed["id"], active["version"], statement="v2")
            with pytest.raises(StaleVersion) as stale:
                await agent.correct_memory(proposed["id"], active["version"], statement="v2b")
            retired = await rita.retire(proposed["id"], reason="APR-2291 was withdrawn")
            task = await agent.check_task("renewal-9")
            audit = [e["action"] async for e in rita.iter_audit(target=proposed["id"])]

        assert active["status"] == "active"
        assert [f["memory_id"] for f in resolved["facts"]] == [proposed["id"]]
        assert listed == [proposed["id"]]
        assert stale.value.current_version == 2
        assert retired["flagged_tasks"] == ["renewal-9"]
        assert task["needs_reverification"] is True
        assert audit[0] == "memory.proposed" and "memory.retired" in audit

    _run(story())


class AsyncDropsFirstAnswer(httpx.AsyncBaseTransport):
    """As ``DropsFirstAnswer``: the server handled the first request, its answer is lost."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.keys: list[str | None] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        self.keys.append(request.headers.get("Idempotency-Key"))
        if len(self.keys) == 1:
            await response.aread()
            await response.aclose()
            raise httpx.ReadError("connection reset before the answer arrived", request=request)
        return response


def test_the_async_client_retries_a_lost_answer_and_creates_one_entity(connect_async, sleeps):
    network = AsyncDropsFirstAnswer()

    async def create() -> str:
        async with connect_async("agent", transport=network) as agent:
            entity = await agent.create_entity(kind="customer", name="Dana Kim")
            return str(entity["id"])

    created = _run(create())

    assert list(Entity.objects.values_list("pk", flat=True)) == [created]
    assert len(network.keys) == 2 and network.keys[0] and network.keys[0] == network.keys[1]
    assert len(sleeps.waited) == 1


def _public(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(cls).items()
        if callable(member) and not name.startswith("_")
    }


def test_both_clients_offer_the_same_operations_with_the_same_parameters():
    sync, asyn = _public(Memgov), _public(AsyncMemgov)
    sync.pop("close")
    asyn.pop("aclose")

    assert sync.keys() == asyn.keys()
    # Every published operation (test_operations.py), iterators over its lists, health, schema.
    assert len(sync) == 61
    for name, signature in sync.items():
        assert list(signature.parameters) == list(asyn[name].parameters), name
        assert inspect.iscoroutinefunction(getattr(AsyncMemgov, name)) or name.startswith("iter_")
