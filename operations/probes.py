"""The probe port: ``/healthz`` and ``/readyz`` from a thread of each gunicorn worker.

On the web port a probe waits in the same queue as requests: during a database outage
every request thread waited on the database and ``/healthz`` took 28.9 s, so the kubelet
would have restarted every healthy pod (issue 36). Here each worker process answers probes
from its own thread, which never waits behind a request: liveness is answered at once
while the process lives, readiness within MEMGOV_READY_TIMEOUT_SECONDS (operations.health).

Every worker binds the same port with SO_REUSEPORT, so the kernel spreads probes over
them and no single worker is the pod's only voice. The port is not in the Service nor the
Ingress: readiness is never public."""

from __future__ import annotations

import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

logger = logging.getLogger(__name__)


class _ProbeHandler(BaseHTTPRequestHandler):
    server_version = "memgov-probe"

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._answer(200, {"status": "ok"})
        elif self.path == "/readyz":
            from operations.health import readiness  # noqa: PLC0415 - Django is loaded by now

            self._answer(*readiness())
        else:
            self._answer(404, {"status": "not found"})

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Probes every few seconds are not worth a log line each."""


class ProbeServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()


def serve_probes(host: str, port: int) -> ProbeServer:
    """Start answering probes on ``host:port`` from a daemon thread; the server."""
    server = ProbeServer((host, port), _ProbeHandler)
    threading.Thread(target=server.serve_forever, name="probes", daemon=True).start()
    logger.info("probes on %s:%s", host, server.server_address[1])
    return server
