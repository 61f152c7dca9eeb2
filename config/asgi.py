"""The ASGI application (uvicorn, alone or as gunicorn's workers): the MCP server at
``/mcp`` (``agent_mcp``) and Django for everything else."""

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from typing import Any, cast

import django
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.http import FileResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.urls import set_script_prefix
from starlette.types import ASGIApp, Receive, Scope, Send

from config.processes import favour_throughput, web_threads
from config.tenant_share import TenantShare, refuse, tenant_of

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
    caches are the warmest. A request finding all busy waits for one, as under gthread,
    but threads are handed out fairly between tenants, and a tenant with
    ``max_in_flight`` requests in this process is refused the next (``config.tenant_share``)."""

    def __init__(self, threads: int, max_in_flight: int = 0) -> None:
        super().__init__()
        executors = [
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"django-request-{number}")
            for number in range(threads)
        ]
        self._threads = TenantShare(executors, max_in_flight)

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        tenant = tenant_of(scope)
        if not self._threads.admits(tenant):
            await refuse(send)
            return
        executor = await self._threads.acquire(tenant)
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.handle(scope, receive, send)
        finally:
            self._threads.release(tenant, executor)

    async def handle(self, scope: Any, receive: Any, send: Any) -> None:
        """Django's ``handle`` with its hops to the request's thread made one: the
        ``request_started`` signal, the request, the response and, unless it is streamed,
        its ``close`` (``request_finished``: the connection back to the pool) run there in
        WSGI's order, and the answer is sent after, a streamed one part by part as its
        thread reads them (Django reads such a stream whole before sending any of it, an
        export or a static file held in memory). As under WSGI, a request whose body
        has arrived is carried out even if its client leaves meanwhile (nothing is sent
        then); Django's own handler could cancel it before its view started."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return

        async def answer() -> HttpResponseBase:
            response: HttpResponseBase = await sync_to_async(self._answer)(scope, body_file)
            if isinstance(response, StreamingHttpResponse) and not response.is_async:
                parts = cast("Iterator[bytes]", response.streaming_content)
                response.streaming_content = _read_in_its_thread(parts)
            with contextlib.suppress(asyncio.CancelledError):  # gone while it was sent
                await self.send_response(response, send)
            return response

        answering = asyncio.create_task(answer())
        tasks = [asyncio.create_task(self.listen_for_disconnect(receive)), answering]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        try:
            response = answering.result()
        except asyncio.CancelledError:
            await signals.request_finished.asend(sender=self.__class__)
        else:
            if response.streaming:
                await sync_to_async(response.close)()
        body_file.close()

    def _answer(self, scope: Any, body_file: Any) -> HttpResponseBase:
        """What ``WSGIHandler.__call__`` does for a request, in the request's thread."""
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, refused = self.create_request(scope, body_file)
        if request is None:
            response = cast("HttpResponseBase", refused)
        else:
            response = self.get_response(request)
            response._handler_class = self.__class__  # type: ignore[attr-defined]  # Django's
            if isinstance(response, FileResponse):  # ASGI servers chunk it themselves
                response.block_size = self.chunk_size
        if not response.streaming:
            response.close()
        return response


_END = object()


async def _read_in_its_thread(parts: Iterator[bytes]) -> AsyncIterator[bytes]:
    """A sync stream's parts one at a time, each read in the request's thread (the
    ``ThreadSensitiveContext`` it runs in), as the server sends them."""
    following = sync_to_async(lambda: next(parts, _END))
    while (part := await following()) is not _END:
        yield part  # type: ignore[misc]  # not _END: bytes


# Sets Django up before the MCP app loads (as ``get_asgi_application`` does); its handler is
# a plain ASGI app (stubs are narrower).
django.setup(set_prefix=False)
django_application = cast(
    "ASGIApp",
    OneHopASGIHandler(threads=web_threads(), max_in_flight=settings.TENANT_MAX_IN_FLIGHT),
)

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
