"""The web application gunicorn serves (deploy/gunicorn.conf.py, gthread workers): Django
for the site and the API, and the MCP server at ``/mcp`` (``config.mcp``)."""

import os
from collections.abc import Iterable
from wsgiref.types import StartResponse, WSGIEnvironment

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

from config.mcp import is_mcp, mcp_application  # noqa: E402 - needs the apps loaded above

mcp_wsgi_application, mcp_with_telemetry = mcp_application()


def application(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    if is_mcp(environ.get("PATH_INFO", "")):
        return mcp_wsgi_application(environ, start_response)
    return django_application(environ, start_response)
