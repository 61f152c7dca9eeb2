"""The MCP server (the SDK's low-level ``Server``): lists the tools and runs each call in a
thread, since Django's ORM is synchronous. The key is read per call, so a key revoked in
the middle of a session stops working on its next call."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from mcp.server import Server, ServerRequestContext

from agent_mcp.calls import Outcome, call_tool
from agent_mcp.outputs import output_schema
from agent_mcp.tools import TOOLS

NAME = "memgov"
INSTRUCTIONS = (
    "Memgov is governed long-term memory. Before acting on anything you remember about a "
    "person, order or rule, call resolve (with task_id) and use only its 'facts'; an "
    "abstention means do not guess. Call check_task right before a consequential action. "
    "Record what the user said with record_source, then propose_memory or correct_memory: "
    "a proposal is not used until a person approves it and its checks pass."
)

KeyOf = Callable[[ServerRequestContext[Any]], "str | None"]


def tool_list() -> list[types.Tool]:
    return [
        types.Tool(
            name=tool.name,
            title=tool.title,
            description=tool.description,
            input_schema=tool.input_schema(),
            output_schema=output_schema(tool.name),
            annotations=types.ToolAnnotations(
                title=tool.title,
                read_only_hint=not tool.writes,
                destructive_hint=False,
                idempotent_hint=not tool.writes,
                open_world_hint=False,
            ),
        )
        for tool in TOOLS
    ]


def tool_result(outcome: Outcome) -> types.CallToolResult:
    """The JSON answer as text (what every client shows a model) and as structured content."""
    text = json.dumps(outcome.body, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=outcome.body,
        is_error=outcome.is_error,
    )


def build_server(key_of: KeyOf) -> Server[Any]:
    """``key_of`` says which API key a call carries: the HTTP request's bearer token, or
    the key the stdio process was started with."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list())

    async def call(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        run = sync_to_async(call_tool, thread_sensitive=True)
        return tool_result(await run(key_of(ctx), params.name, dict(params.arguments or {})))

    return Server(
        NAME,
        version="1.1",
        title="Memgov",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call,
    )
