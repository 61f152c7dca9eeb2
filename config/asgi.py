"""The ASGI application (uvicorn, alone or as gunicorn's workers): the MCP server at
``/mcp`` (``agent_mcp``) and Django for everything else."""

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from typing import Any, cast

import django
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from starlette.types import ASGIApp, Receive, Scope, Send

from config.processes import favour_throughput, web_threads

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Pooled connections, not persistent ones, as Django's documentation asks for ASGI
# (config/settings.py).
os.environ.setdefault("MEMGOV_DB_POOL", "true")
favour_throughput()  # before the threads that run sync code start: they inherit it


class OneHopASGIHandler(ASGIHandler):
    """Django's ASGI handler with its middleware chain built as under WSGI, run in one hop
    to a thread kept for requests.

    Built for async, the chain went back and forth between the event loop and the
    request's thread at every sync step (Django's own middleware runs each
    ``process_request`` and ``process_response`` through ``sync_to_async``), and every
    request started a thread of its own (``ThreadSensitiveContext``): a bare JSON answer
    took 3.5 ms at one client where the WSGI server takes 0.6 ms. Here a request's sync
    code still runs in one thread, as ``thread_sensitive`` asks, but in one of
    ``threads`` kept ones (``MEMGOV_WEB_THREADS``): the one that finished last, whose
    caches are the warmest. A request finding all busy waits for one, as under gthread."""

    def __init__(self, threads: int) -> None:
        super().__init__()
        self._idle: asyncio.LifoQueue[ThreadPoolExecutor] = asyncio.LifoQueue()
        for number in range(threads):
            name = f"django-request-{number}"
            self._idle.put_nowait(ThreadPoolExecutor(max_workers=1, thread_name_prefix=name))

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = await self._idle.get()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            self._idle.put_nowait(executor)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase = await sync_to_async(self.get_response)(request)
        return response


# Sets Django up before the MCP app loads (as ``get_asgi_application`` does); its handler is
# a plain ASGI app (stubs are narrower).
django.setup(set_prefix=False)
django_application = cast("ASGIApp", OneHopASGIHandler(threads=web_threads()))

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
