"""The MCP server at ``/mcp`` as a WSGI application, so that gunicorn's gthread workers serve
it beside Django (``config.wsgi``; docs/decisions/0017-mcp-through-a-wsgi-bridge.md).

The MCP SDK's streamable HTTP transport is ASGI. Each worker process runs it on an event
loop of its own, in a background thread, and a2wsgi's ``ASGIMiddleware`` hands it each
``/mcp`` request from the request's gunicorn thread. The SDK's session manager needs its
task group running (its lifespan): it is entered once on that loop when the process loads
the application, and lasts as long as the process. Stateless JSON mode (``agent_mcp.http``)
makes each request stand alone, so any worker may answer any request of a session.

Start the loop after gunicorn forks (its default, without ``preload_app``): a thread does
not survive a fork."""

from __future__ import annotations

import asyncio
import threading
from typing import cast
from wsgiref.types import WSGIApplication

from a2wsgi import ASGIMiddleware

from agent_mcp.http import McpHttpApp
from gateway.boundary import WsgiBodyBoundary
from operations.telemetry import AsgiRequestTelemetry


def is_mcp(path: str) -> bool:
    return path == "/mcp" or path.startswith("/mcp/")


def _loop_with(server: McpHttpApp) -> asyncio.AbstractEventLoop:
    """A new event loop in a daemon thread, running the session manager until the process
    ends; returns once the manager has started (or raises what stopped it)."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="mcp-event-loop", daemon=True).start()
    started = threading.Event()

    async def run_for_the_process() -> None:
        async with server.lifespan():
            started.set()
            await asyncio.Event().wait()  # never set: the manager runs until the process ends

    running = asyncio.run_coroutine_threadsafe(run_for_the_process(), loop)
    running.add_done_callback(lambda _: started.set())
    started.wait()
    if running.done():
        running.result()  # raises the manager's error: the worker stops, gunicorn with it
    return loop


def mcp_application() -> tuple[WSGIApplication, AsgiRequestTelemetry]:
    """The WSGI application for ``/mcp``, and the ASGI one it bridges to (the MCP server
    wrapped in the request telemetry Django's middleware gives every other request)."""
    server = McpHttpApp()
    with_telemetry = AsgiRequestTelemetry(server, route="/mcp")
    bridged = ASGIMiddleware(with_telemetry, loop=_loop_with(server))
    # a2wsgi types the environ as a TypedDict of its own: a WSGI application all the same.
    return WsgiBodyBoundary(cast("WSGIApplication", bridged)), with_telemetry
