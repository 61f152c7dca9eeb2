"""README's stdio MCP configuration, as written (issue 33, point 4): an MCP client that
starts ``manage.py mcp`` with exactly the snippet's environment (its placeholders filled
with this deployment's values) gets a working server, and that server sees what the web
role changes: a preference retired over REST is gone from its next resolve."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from memory import entities
from tests.api.support import preference_body
from tests.conftest import World, needs
from tests.mcp.conftest import ROOT, Live
from tests.mcp.support import TOOL_NAMES, answer

pytestmark = [
    needs("postgres"),
    needs("redis"),
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
]

PATIENCE = 90.0


def readme_stdio_config() -> dict[str, Any]:
    """The ``mcpServers`` block that follows README's **stdio** paragraph."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    after = readme[readme.index("**stdio**") :]
    block = re.search(r"```json\n(.*?)```", after, re.DOTALL)
    assert block is not None
    return dict(json.loads(block.group(1))["mcpServers"]["memgov"])


def _filled(value: str, live: Live, key: str) -> str:
    """The snippet's placeholders, and nothing else, replaced by this deployment's values."""
    placeholders = {
        "/path/to/memgov": str(ROOT),
        "mg_…": key,
        "<the deployment's SECRET_KEY>": live.env["SECRET_KEY"],
        "postgres://…": live.env["DATABASE_URL"],
        "redis://…": live.env["REDIS_URL"].rsplit("/", 1)[
            0
        ],  # the server; the snippet names each database
        "smtp://…": live.env["EMAIL_URL"],
    }
    for placeholder, real in placeholders.items():
        value = value.replace(placeholder, real)
    assert "…" not in value and "<" not in value, value
    return value


def test_the_readme_stdio_config_starts_a_server_that_sees_a_retirement(live, world: World):
    config = readme_stdio_config()
    server = StdioServerParameters(
        command=_filled(config["command"], live, ""),
        args=[_filled(arg, live, "") for arg in config["args"]],
        env={
            name: _filled(value, live, world.keys["agent"]) for name, value in config["env"].items()
        },
    )
    dana = entities.entity_create(
        principal=world.principal("agent"), kind="person", name="Dana", aliases=[], external_ref=""
    ).pk
    ask = {"subject": dana, "fields": ["delivery_address"], "context": {}}

    async def story() -> None:
        async with Client(server, read_timeout_seconds=60) as agent:
            listed = await agent.list_tools()
            assert [tool.name for tool in listed.tools] == TOOL_NAMES
            said = answer(
                await agent.call_tool(
                    "record_source", {"kind": "message", "content": "Dana: deliver to my home."}
                )
            )
            proposed = answer(
                await agent.call_tool("propose_memory", preference_body(dana, said["id"]))
            )
            with anyio.fail_after(PATIENCE):  # the worker runs the checks
                while not answer(await agent.call_tool("resolve", ask))["facts"]:
                    await anyio.sleep(0.2)
            [fact] = answer(await agent.call_tool("resolve", ask))["facts"]  # cached now
            assert fact["value"] == "12 Elm Street"

            status, retired = live.call(
                "POST",
                f"/api/v1/memories/{proposed['id']}/retire",
                world.keys["rita"],
                {"reason": "Dana moved", "in_flight": "continue"},
            )
            assert status == 200, retired

            after = answer(await agent.call_tool("resolve", ask))
            assert after["facts"] == []

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(anyio.run, story).result()
