"""The ASGI application the API contract names (docs/api.md, MCP): the MCP server's
streamable HTTP at ``/mcp``, natively, and Django for the site and the API through
a2wsgi's ``WSGIMiddleware``: Django's WSGI handler in a fixed pool of
``MEMGOV_WEB_THREADS`` threads, each keeping its persistent connection, as under
gunicorn's gthread workers (Django's own ASGI handler starts a thread a request, which
persistent connections do not survive).

Any ASGI server serves it, e.g. ``uvicorn config.asgi:application``: the way to run MCP
in a process of its own. The deployed web role is ``config.wsgi`` under gunicorn, with
``/mcp`` bridged into it (docs/decisions/0017); ``bench.mcp_bench`` measures the two."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_wsgi_application = get_wsgi_application()

# After the apps are loaded above.
from a2wsgi import WSGIMiddleware  # noqa: E402
from django.conf import settings  # noqa: E402
from starlette.types import Receive, Scope, Send  # noqa: E402

from agent_mcp.http import McpHttpApp  # noqa: E402
from config.mcp import is_mcp  # noqa: E402
from operations.telemetry import AsgiRequestTelemetry  # noqa: E402

mcp_server = McpHttpApp()
_mcp = AsgiRequestTelemetry(mcp_server, route="/mcp")
_site = WSGIMiddleware(django_wsgi_application, workers=settings.WEB_THREADS)  # type: ignore[arg-type]


async def application(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
    elif scope["type"] == "http" and is_mcp(scope["path"]):
        await _mcp(scope, receive, send)
    else:
        await _site(scope, receive, send)  # type: ignore[arg-type]


async def _lifespan(receive: Receive, send: Send) -> None:
    """The MCP session manager's task group runs as long as the server; Django needs none."""
    await receive()  # lifespan.startup
    async with mcp_server.lifespan():
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
    await send({"type": "lifespan.shutdown.complete"})
