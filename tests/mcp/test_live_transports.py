"""Seed 002's delivery story told by an agent through MCP, over streamable HTTP (the
live web role, gunicorn serving ``config.wsgi``; and ``uvicorn config.asgi:application``,
the ASGI application the contract names) and over stdio (``manage.py mcp``), with a
real Celery worker running the scenario checks: record the order, propose its address, a
reviewer approves (REST, personal key), the worker checks, resolve returns it, check_task
is clean, the agent corrects it. Also: another tenant sees 404s, a revoked key is refused."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

import anyio
import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from accounts import tenancy
from core.models import ApiKey
from memory import entities
from tests.conftest import World, iso, later, needs
from tests.mcp.conftest import ROOT, Live
from tests.mcp.support import TOOL_NAMES, answer, problem

T = TypeVar("T")

pytestmark = [
    needs("postgres"),
    needs("redis"),
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
]

ORDER_A = {"task": "order-a"}


def _run(story: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``anyio.run`` in a thread of its own: Playwright's sync API (browser tests earlier in
    the session) leaves an event loop running in the main thread."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, story, *args).result()


PATIENCE = 90.0  # seconds the worker may take to run the checks on a busy machine
Connect = Callable[[str], AbstractAsyncContextManager[Client]]


class OverHttp:
    """Sessions over streamable HTTP; writes down the status of every HTTP answer."""

    def __init__(self, live: Live) -> None:
        self.live = live
        self.statuses: list[int] = []

    async def _record(self, response: httpx2.Response) -> None:
        self.statuses.append(response.status_code)

    def __call__(self, key: str) -> Client:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
            event_hooks={"response": [self._record]},
        )
        return Client(streamable_http_client(self.live.mcp_url, http_client=http))


def over_stdio(live: Live) -> Connect:
    def connect(key: str) -> Client:
        env = {**live.env, "MEMGOV_API_KEY": key}
        command = StdioServerParameters(
            command=sys.executable, args=["manage.py", "mcp"], env=env, cwd=str(ROOT)
        )
        return Client(command, read_timeout_seconds=60)

    return connect


@pytest.fixture(params=["http", "stdio"])
def connect(request: pytest.FixtureRequest, live: Live) -> Connect:
    return OverHttp(live) if request.param == "http" else over_stdio(live)


@pytest.fixture
def dana(world: World) -> str:
    entity = entities.entity_create(
        principal=world.principal("agent"), kind="person", name="Dana", aliases=[], external_ref=""
    )
    return str(entity.pk)


def _revoke(raw_key: str) -> None:
    tenancy.api_key_revoke(key=ApiKey.objects.get(prefix=raw_key.split("_")[1]))


def _revoke_in_a_thread(raw_key: str) -> None:
    """From async code: the ORM runs in a worker thread, whose connection is closed after."""
    try:
        _revoke(raw_key)
    finally:
        connection.close()


async def _order_record(agent: Client, version: int, address: str) -> str:
    source = answer(
        await agent.call_tool(
            "record_source",
            {
                "kind": "business_record",
                "content": f"Order order-a v{version}: deliver to {address}.",
                "external_ref": "ORD-A",
                "version": str(version),
                "idempotency_key": f"order-a-v{version}",
            },
        )
    )
    return str(source["id"])


async def _until(
    agent: Client, memory_id: str, done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """Poll get_memory until the worker has done its part."""
    with anyio.fail_after(PATIENCE):
        while True:
            memory = answer(await agent.call_tool("get_memory", {"memory_id": memory_id}))
            if done(memory):
                return dict(memory)
            await anyio.sleep(0.2)


async def delivery_story(connect: Connect, live: Live, world: World, dana: str) -> str:
    async with connect(world.keys["agent"]) as agent:
        listed = await agent.list_tools()
        assert [tool.name for tool in listed.tools] == TOOL_NAMES

        match = answer(await agent.call_tool("match_entity", {"name": "dana"}))
        assert (match["decision"], match["candidates"][0]["id"]) == ("matched", dana)

        # The agent records the order and proposes its address: pending, not used.
        proposed = answer(
            await agent.call_tool(
                "propose_memory",
                {
                    "kind": "task_fact",
                    "subject": dana,
                    "field": "delivery_address",
                    "value": "4 Dock Road",
                    "statement": "Order order-a goes to Dana's office.",
                    "scope": ORDER_A,
                    "owner": "rita",
                    "expires_at": iso(later(7)),
                    "sources": [await _order_record(agent, 1, "4 Dock Road")],
                    "basis": {"ref": "ORD-A", "version": "1"},
                },
            )
        )
        memory_id = proposed["id"]
        assert (proposed["status"], proposed["proposed_by"]) == ("pending_review", "agent:bot")
        ask = {"subject": dana, "context": ORDER_A, "fields": ["delivery_address"]}
        unreviewed = answer(await agent.call_tool("resolve", ask))
        assert unreviewed["facts"] == []
        assert [a["reason"] for a in unreviewed["abstentions"]] == ["no_applicable_fact"]

        # A reviewer approves with her personal key; the worker runs the checks.
        status, approved = live.call(
            "POST", f"/api/v1/memories/{memory_id}/approve", world.keys["rita"], {"comment": "ok"}
        )
        # The answer is the memory as it is then: checking, or active when the worker won.
        assert status == 200 and approved["status"] in ("checking", "active"), approved
        active = await _until(agent, memory_id, lambda m: m["status"] != "checking")
        assert (active["status"], active["verification"]) == ("active", "verified_record")
        assert active["checks"]["status"] == "passed" and active["checks"]["failed"] == 0

        # Resolve returns it, with evidence, exactly as REST does; the task is recorded.
        told = answer(await agent.call_tool("resolve", {**ask, "task_id": "order-a-run-1"}))
        [fact] = told["facts"]
        assert (fact["memory_id"], fact["version"], fact["value"]) == (memory_id, 1, "4 Dock Road")
        assert told["retrieval_id"].startswith("rtv_")
        status, by_rest = live.call("POST", "/api/v1/resolve", world.keys["agent"], ask)
        assert status == 200 and by_rest["facts"] == told["facts"]
        assert by_rest["abstentions"] == told["abstentions"] == []
        task = answer(await agent.call_tool("check_task", {"task_id": "order-a-run-1"}))
        assert task["needs_reverification"] is False
        assert [(u["memory_id"], u["status_now"]) for u in task["used"]] == [(memory_id, "active")]

        # The order changes: the agent corrects against the version it read.
        corrected = answer(
            await agent.call_tool(
                "correct_memory",
                {
                    "memory_id": memory_id,
                    "if_match": active["version"],
                    "value": "9 Quay Street",
                    "statement": "Order order-a now goes to 9 Quay Street.",
                    "sources": [await _order_record(agent, 2, "9 Quay Street")],
                    "basis": {"ref": "ORD-A", "version": "2"},
                },
            )
        )
        assert (corrected["version"], corrected["active_version"]) == (2, 1)
        assert corrected["status"] == "pending_review"
        stale = problem(
            await agent.call_tool(
                "correct_memory", {"memory_id": memory_id, "if_match": 1, "value": "x"}
            ),
            409,
        )
        assert stale["current_version"] == 2
        # Until the correction is reviewed, the approved address stays in use, flagged.
        [still] = answer(await agent.call_tool("resolve", ask))["facts"]
        assert (still["version"], still["pending_correction"]) == (1, True)
        # Once the worker's preview of the correction is recorded, both surfaces agree.
        memory = await _until(agent, memory_id, lambda m: m["checks"]["total"] > 0)
        assert (memory["version"], memory["checks"]["status"]) == (2, "passed")
        status, by_rest = live.call("GET", f"/api/v1/memories/{memory_id}", world.keys["agent"])
        assert (status, by_rest) == (200, memory)
    return str(memory_id)


def test_an_agent_tells_the_delivery_story_through_mcp(connect, live, world, dana):
    memory_id = _run(delivery_story, connect, live, world, dana)

    async def other_tenant() -> None:
        async with connect(world.keys["zed"]) as zed:
            problem(await zed.call_tool("get_memory", {"memory_id": memory_id}), 404)
            problem(await zed.call_tool("resolve", {"subject": dana}), 404)
            problem(await zed.call_tool("check_task", {"task_id": "order-a-run-1"}), 404)
            names = [tool.name for tool in (await zed.list_tools()).tools]
            assert not [n for n in names if n in ("approve", "reject", "retire")]

    _run(other_tenant)


def test_a_key_revoked_mid_session_is_refused_on_its_next_call(connect, live, world):
    async def session() -> None:
        async with connect(world.keys["agent"]) as agent:
            answer(await agent.call_tool("match_entity", {"name": "Dana"}))
            await sync_to_async(_revoke_in_a_thread, thread_sensitive=False)(world.keys["agent"])
            if isinstance(connect, OverHttp):  # the next POST itself is refused with a 401
                with pytest.raises(MCPError):
                    await agent.call_tool("match_entity", {"name": "Dana"})
                assert connect.statuses[-1] == 401
            else:  # the stdio process stays up, and the call is a 401 tool error
                result = await agent.call_tool("match_entity", {"name": "Dana"})
                assert problem(result, 401)["detail"] == "Unknown or revoked API key."

    _run(session)


def test_a_bad_or_revoked_key_is_refused_at_connection_over_http(live, world):
    _revoke(world.keys["nora"])

    for key in (world.keys["nora"], "mg_0123456789ab_not-a-real-key", None):
        status, body = live.call(
            "POST", "/mcp", key, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        )
        assert status == 401
        assert body["type"] == "https://memgov.dev/problems/unauthorized"
        assert body["status"] == 401 and body["detail"]
    assert (
        live.call(
            "POST", "/mcp", world.keys["rita"], {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        )[0]
        != 401
    )


def test_manage_py_mcp_refuses_a_revoked_key_at_start(live, world):
    _revoke(world.keys["nora"])

    for key, reason in ((world.keys["nora"], "Unknown or revoked API key."), ("", "Set MEMGOV")):
        done = subprocess.run(
            [sys.executable, "manage.py", "mcp"],
            cwd=ROOT,
            env={**live.env, "MEMGOV_API_KEY": key},
            capture_output=True,
            text=True,
            timeout=120,
            input="",
        )
        assert done.returncode != 0
        assert reason in done.stderr
        assert done.stdout == ""


def test_the_contracts_asgi_application_tells_the_same_story_and_serves_the_site(
    live_asgi, world, dana
):
    _run(delivery_story, OverHttp(live_asgi), live_asgi, world, dana)

    status, health = live_asgi.call("GET", "/healthz", None)
    listed, memories = live_asgi.call("GET", "/api/v1/memories", world.keys["agent"])
    refused, problem_body = live_asgi.call("GET", "/api/v1/memories", None)
    with urllib.request.urlopen(f"{live_asgi.base}/accounts/login/", timeout=10) as page:  # noqa: S310
        sign_in = page.read().decode()

    assert (status, health) == (200, {"status": "ok"})
    assert listed == 200 and memories["results"]
    assert refused == 401 and problem_body["status"] == 401
    assert 'name="password"' in sign_in
