"""A Celery worker's liveness without asking the broker.

The probes were ``celery inspect ping``, a round trip through Redis: during a Redis outage
every ping failed and Kubernetes restarted healthy workers, which then waited for Redis
anyway (issue 47). Instead the worker's main process touches a heartbeat file from its
event loop (a timer of the worker, so a stuck loop stops touching it), and the probe
(``python -m operations.worker_probe NODE``) passes while the file is fresh. A stale file while
the broker does not answer is the worker waiting to reconnect, which a restart would not
change: the probe passes then too, and fails only for a stale heartbeat while the broker
answers."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from celery import bootsteps
from django.conf import settings
from redis import Redis
from redis.exceptions import RedisError

HEARTBEAT_SECONDS = 10.0


def heartbeat_path(node: str) -> Path:
    """One file per worker node (``celery@host``, ``webhooks@host``): make prod runs two."""
    return Path(settings.VAR_DIR) / f"worker-heartbeat-{node.replace('/', '_')}"


class Heartbeat(bootsteps.StartStopStep):
    """Touches the node's heartbeat file every ``HEARTBEAT_SECONDS`` from the worker's
    timer, which runs in its event loop."""

    requires = ("celery.worker.components:Timer",)

    def __init__(self, worker: Any, **kwargs: Any) -> None:
        super().__init__(worker, **kwargs)
        self.tref: Any = None

    def start(self, worker: Any) -> None:
        path = heartbeat_path(str(worker.hostname))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        self.tref = worker.timer.call_repeatedly(HEARTBEAT_SECONDS, path.touch)

    def stop(self, worker: Any) -> None:
        if self.tref is not None:
            self.tref.cancel()


def _broker_answers() -> bool:
    broker = str(settings.CELERY_BROKER_URL)
    if not broker.startswith(("redis://", "rediss://", "unix://")):
        return True  # the filesystem transport (make run) has nothing to wait for
    client = Redis.from_url(broker, socket_timeout=3, socket_connect_timeout=3)
    try:
        return bool(client.ping())
    except RedisError:
        return False
    finally:
        client.close()


def check(node: str, stale_after: float) -> tuple[bool, str]:
    """Is this worker node alive? (passes, why)."""
    try:
        age = time.time() - heartbeat_path(node).stat().st_mtime
    except FileNotFoundError:
        age = float("inf")
    if age <= stale_after:
        return True, f"{node}: heartbeat {age:.0f} s ago"
    if not _broker_answers():
        return True, f"{node}: no heartbeat for {age:.0f} s, but the broker does not answer"
    return False, f"{node}: no heartbeat for {age:.0f} s while the broker answers"
