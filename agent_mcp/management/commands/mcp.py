"""``python manage.py mcp``: the MCP server over stdio, for a client that starts it as a
subprocess (docs/api.md, MCP and the Python client). The key comes from
``MEMGOV_API_KEY``; stdout carries only the protocol (logs go to stderr)."""

from __future__ import annotations

import os
from typing import Any

import anyio
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from mcp.server.stdio import stdio_server

from agent_mcp.calls import check_key
from agent_mcp.server import build_server
from core.deployment import check_redis_databases

ENV = "MEMGOV_API_KEY"


class Command(BaseCommand):
    help = "Serve the MCP tools over stdio with the API key in MEMGOV_API_KEY."

    def handle(self, *args: Any, **options: Any) -> None:
        raw = os.environ.get(ENV, "").strip()
        if not raw:
            raise CommandError(f"Set {ENV} to an API key (manage.py create_api_key prints one).")
        try:
            check_redis_databases()
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from exc
        refused = check_key(raw)
        if refused is not None:
            raise CommandError(f"{ENV} is refused: {refused}")
        anyio.run(self._serve, raw)

    async def _serve(self, raw: str) -> None:
        # Checked again on every call: a key revoked mid-session stops working at once.
        server = build_server(lambda ctx: raw)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
