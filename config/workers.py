"""gunicorn's worker for ``config.asgi`` (deploy/gunicorn.conf.py): uvicorn in each worker
process, so the REST API, the dashboard and the MCP server at ``/mcp`` share one server.

uvicorn 0.54 still ships ``uvicorn.workers`` (deprecated in favour of the separate
``uvicorn-worker`` package, which is not a dependency yet); this subclass pins what we
rely on: the lifespan runs (the MCP session manager starts with the worker, and a failure
there stops the worker instead of failing every /mcp request), proxy headers are left to
Django (``MEMGOV_TRUST_X_FORWARDED_PROTO``), as they were under the sync workers, and the
HTTP parser and the event loop are the compiled ones (httptools and uvloop, both
dependencies). Left to "auto", uvicorn silently falls back to h11 and asyncio's own loop,
both pure Python, when those are not installed: the web role then answered a quarter to
two fifths fewer requests a second (bench/README.md, thirteenth round)."""

from __future__ import annotations

import warnings
from typing import Any

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from uvicorn.workers import UvicornWorker


class MemgovUvicornWorker(UvicornWorker):
    CONFIG_KWARGS: dict[str, Any] = {
        "loop": "uvloop",
        "http": "httptools",
        "lifespan": "on",
        "proxy_headers": False,
    }
