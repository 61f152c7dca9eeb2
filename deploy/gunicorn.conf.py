"""gunicorn settings for production; every value can be overridden from the environment.

Metrics: each worker process writes its samples to PROMETHEUS_MULTIPROC_DIR (a fresh
directory per server when unset), and ``/metrics`` adds them up, so a scrape sees the
whole server whatever worker answers it."""

import multiprocessing
import os
from pathlib import Path
from typing import Any

from scripts import metrics_dirs

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() * 2 + 1))
# gthread: each worker process answers MEMGOV_WEB_THREADS requests at once (default 8), one
# per thread, with one persistent PostgreSQL connection each (config/settings.py); more
# wait in the worker's queue. config.wsgi serves Django and the MCP server at /mcp.
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gthread")
threads = int(os.environ.setdefault("MEMGOV_WEB_THREADS", "8"))  # settings read it too
# One tenant may hold every thread but one (gateway/tenant_share.py); 0: no cap.
os.environ.setdefault("MEMGOV_TENANT_MAX_IN_FLIGHT", str(max(1, threads - 1)))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
# A request's statement is cancelled after this (a quick 503, config/settings.py), so a
# hung PostgreSQL frees the thread long before gunicorn's timeout; web processes only.
os.environ.setdefault("MEMGOV_DB_STATEMENT_TIMEOUT", "10s")
# No SELECT 1 before each request's first statement: a dead persistent connection is found
# by that first read and it runs again on a new one (core.sql.read_reconnecting).
os.environ.setdefault("MEMGOV_DB_HEALTH_CHECKS", "false")
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
keepalive = 5

# A worker is replaced after this many requests (insurance against a slow leak; 0 never)
# plus a random share of the jitter, so that workers are not replaced together. A replacement boots
# Django again on a core while the other workers serve alone: at 10,000 (the value
# before), a worker answering a thousand requests a second was replaced every ten seconds,
# and the web role served 1,118-1,326 warm resolves a second instead of 1,970-2,152
# (bench/README.md, fourteenth round). Without replacement, a worker's memory stopped
# growing after 60,000 requests (127 -> 134 MiB) and was the same at 118,000.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "1000000"))
max_requests_jitter = int(os.environ.get("GUNICORN_MAX_REQUESTS_JITTER", str(max_requests // 10)))

# Memgov logs one JSON line per request itself (operations.logs); gunicorn's access log would
# be a second, unstructured line. GUNICORN_ACCESS_LOG=- brings it back.
accesslog = os.environ.get("GUNICORN_ACCESS_LOG") or None
errorlog = "-"
# MEMGOV_LOG_FORMAT=json: gunicorn's own lines (and its access log, when asked for) are
# JSON lines too, not plain text among the application's (operations/logs.py). A logging
# dict makes gunicorn write access lines even without accesslog: they are dropped then.
if os.environ.get("MEMGOV_LOG_FORMAT") == "json":
    from operations.logs import gunicorn_logging_config

    logconfig_dict = gunicorn_logging_config(level=os.environ.get("LOG_LEVEL", "INFO"))
    if accesslog is None:
        logconfig_dict["loggers"]["gunicorn.access"]["level"] = "WARNING"
# The proxy header is trusted by Django (MEMGOV_TRUST_X_FORWARDED_PROTO), not by gunicorn.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")

# Set before the workers import prometheus_client: it decides its mode at import. A
# directory made here is this server's own and is removed when it exits (on_exit), or by
# the next server if this one was killed first (scripts/metrics_dirs.py); the file is read
# again on SIGHUP, so the environment remembers which directory that is.
if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = os.environ["MEMGOV_OWN_METRICS_DIR"] = str(
        metrics_dirs.make_own("web")
    )
METRICS_DIR = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
# Probes (/healthz, /readyz) on their own port, answered by a thread of each worker that
# never waits behind requests (operations/probes.py); on the bind address's host. 0: none.
probe_port = int(os.environ.get("MEMGOV_PROBE_PORT", "8001"))


def on_starting(server: Any) -> None:
    """Samples of a previous server would be added to this one's: start empty."""
    METRICS_DIR.mkdir(parents=True, exist_ok=True)
    for samples in METRICS_DIR.glob("*.db"):
        samples.unlink()


def post_worker_init(worker: Any) -> None:
    """Each worker answers probes from its own thread (operations/probes.py). A web worker on
    other Redis databases than the deployment's other processes would serve answers they
    invalidated: it stops here, and gunicorn with it. The embedding model loads in the
    background, so the first search does not wait for it."""
    from core.deployment import check_redis_databases  # noqa: PLC0415
    from core.metrics import WEB_THREADS  # noqa: PLC0415
    from memory.embeddings import warm_up  # noqa: PLC0415
    from operations.probes import serve_probes  # noqa: PLC0415 - the app is loaded now

    if probe_port:
        serve_probes(_probe_host(str(worker.cfg.bind[0])), probe_port)
    WEB_THREADS.set(worker.cfg.threads)  # capacity, beside memgov_web_requests_in_flight
    check_redis_databases()
    warm_up()  # semantic retrieval's model, if any, in the background


def _probe_host(bind_address: str) -> str:
    """The web port's host (loopback stays loopback); a Unix socket's probes: loopback."""
    if bind_address.startswith(("unix:", "fd://")):
        return "127.0.0.1"
    return bind_address.rsplit(":", 1)[0].strip("[]") or "0.0.0.0"  # noqa: S104 - as bound


def on_exit(server: Any) -> None:
    """No /tmp/memgov-metrics-* left behind by a server that made its own."""
    own = os.environ.get("MEMGOV_OWN_METRICS_DIR")
    if own and Path(own) == METRICS_DIR:
        metrics_dirs.remove_own(METRICS_DIR)


def child_exit(server: Any, worker: Any) -> None:
    # Imported here: gunicorn hook runs in the worker, after fork.
    from prometheus_client import multiprocess  # noqa: PLC0415

    multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]  # untyped lib
