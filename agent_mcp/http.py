"""``/mcp`` over streamable HTTP: the Host, the path and method, and the bearer key are
checked on every HTTP request (a bad or revoked key gets the REST API's 401 problem before
any MCP message is read; another path under ``/mcp/`` a 404 problem, another method a
405 one, as the API answers them), then the SDK's session manager answers.

Stateless and JSON responses: each request stands alone, so any worker process of the
server may answer any request of a session (no in-memory session to pin to one worker)."""

from __future__ import annotations

import json
from contextlib import AbstractAsyncContextManager
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from agent_interface.problems import PROBLEM_CONTENT_TYPE, problem_body
from agent_mcp.calls import check_key
from agent_mcp.server import build_server

# The one endpoint (some clients add the slash) and the methods streamable HTTP uses.
ENDPOINTS = ("/mcp", "/mcp/")
METHODS = ("GET", "POST", "DELETE")


def bearer_key(authorization: str | None) -> str | None:
    scheme, _, raw = (authorization or "").partition(" ")
    if scheme != "Bearer":
        return None
    return raw.strip() or None


def _key_of_request(ctx: ServerRequestContext[Any]) -> str | None:
    request = ctx.request
    headers = getattr(request, "headers", None)
    return bearer_key(headers.get("authorization")) if headers is not None else None


async def _problem(send: Send, status: int, detail: str, headers: dict[str, str]) -> None:
    body = json.dumps(problem_body(status, detail)).encode()
    raw = [(b"content-type", PROBLEM_CONTENT_TYPE.encode()), (b"content-length", b"%d" % len(body))]
    raw += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class McpHttpApp:
    def __init__(self) -> None:
        self.server = build_server(_key_of_request)
        self.manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=True,
            stateless=True,
            # Django's ALLOWED_HOSTS is checked below; a bearer key (never a cookie) is the
            # credential, so a rebound DNS name gains a page nothing.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=settings.MAX_REQUEST_BODY_BYTES,
        )

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """The session manager's task group lives as long as the server process."""
        return self.manager.run()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        domain, _ = split_domain_port(headers.get("host", ""))
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            await _problem(send, 400, "The request could not be understood.", {})
            return
        if scope["path"] not in ENDPOINTS:
            await _problem(send, 404, f"No MCP endpoint at {scope['path']}.", {})
            return
        if scope["method"] not in METHODS:
            detail = f"{scope['path']} answers {', '.join(METHODS)} only."
            await _problem(send, 405, detail, {"Allow": ", ".join(METHODS)})
            return
        refused = await sync_to_async(check_key, thread_sensitive=True)(
            bearer_key(headers.get("authorization"))
        )
        if refused is not None:
            detail = (
                refused if headers.get("authorization") else "Use 'Authorization: Bearer <key>'."
            )
            await _problem(send, 401, detail, {"WWW-Authenticate": "Bearer"})
            return
        await self.manager.handle_request(scope, receive, send)
