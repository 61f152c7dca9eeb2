"""The ASGI application (uvicorn, alone or as gunicorn's workers): the MCP server at
``/mcp`` (``agent_mcp``) and Django for everything else."""

import os
from contextlib import AsyncExitStack
from typing import cast

from django.core.asgi import get_asgi_application
from starlette.types import ASGIApp, Receive, Scope, Send

from config.processes import favour_throughput

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# A request's sync code runs in a thread of its own here: pooled connections, not
# persistent ones (config/settings.py).
os.environ.setdefault("MEMGOV_DB_POOL", "true")
favour_throughput()  # before the threads that run sync code start: they inherit it
# Sets Django up before the MCP app loads; its handler is a plain ASGI app (stubs are narrower).
django_application = cast("ASGIApp", get_asgi_application())

from agent_mcp.http import McpHttpApp  # noqa: E402 - needs the apps loaded above
from config.boundary import AsgiBodyBoundary  # noqa: E402
from config.telemetry import AsgiRequestTelemetry  # noqa: E402

mcp_application = McpHttpApp()
# Django's middleware logs and times its own requests; these bypass it.
mcp_with_telemetry = AsgiRequestTelemetry(mcp_application, route="/mcp")


async def _lifespan(receive: Receive, send: Send) -> None:
    """Django has no lifespan; the MCP session manager needs its task group running."""
    async with AsyncExitStack() as stack:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await stack.enter_async_context(mcp_application.lifespan())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await stack.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


def _is_mcp(path: str) -> bool:
    return path == "/mcp" or path.startswith("/mcp/")


async def _route(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
    elif scope["type"] == "http" and _is_mcp(scope["path"]):
        await mcp_with_telemetry(scope, receive, send)
    else:
        await django_application(scope, receive, send)


application = AsgiBodyBoundary(_route)
