"""MCP sessions for the tests: the SDK's own ``Client``, in-process (the server object
itself, on the test database), over streamable HTTP (the live web role), or over stdio
(``manage.py mcp`` as a subprocess). Every call goes through the real server code."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
from mcp import Client
from mcp_types import CallToolResult

from agent_mcp.server import build_server

T = TypeVar("T")

TOOL_NAMES = [
    "resolve",
    "check_task",
    "record_source",
    "propose_memory",
    "correct_memory",
    "get_memory",
    "match_entity",
    # The read side (agent_mcp.discovery_tools).
    "search",
    "list_entity_facts",
    "list_my_proposals",
    "create_entity",
    "add_alias",
    "list_entity_kinds",
    "match_external_ref",
    # The context block, clarification and the field catalog (agent_mcp.context_tools).
    "build_context",
    "clarify",
    "describe_fields",
]


def answer(result: CallToolResult) -> Any:
    """A successful call's JSON answer (a failed call fails the test with its problem)."""
    assert not result.is_error, result.structured_content
    return result.structured_content


def problem(result: CallToolResult, status: int) -> dict[str, Any]:
    """A failed call's problem document, which must carry type, status and detail."""
    assert result.is_error, result.structured_content
    body = result.structured_content
    assert body is not None
    assert body["status"] == status, body
    assert body["type"].startswith("https://memgov.dev/problems/")
    assert body["detail"]
    return dict(body)


class InProcess:
    """The MCP server object with a fixed key, like ``manage.py mcp`` but in this process:
    tool calls run in this thread (``async_to_sync``), so they see the test's database."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.server = build_server(lambda ctx: self.key)

    def _session(self, work: Callable[[Client], Awaitable[T]]) -> T:
        async def run() -> T:
            async with Client(self.server) as client:
                return await work(client)

        return async_to_sync(run)()

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        return self._session(lambda client: client.call_tool(name, arguments or {}))

    def tool_names(self) -> list[str]:
        listed = self._session(lambda client: client.list_tools())
        return [tool.name for tool in listed.tools]
