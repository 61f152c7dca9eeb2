"""Issue 47 follow-up, point 1: a worker holding a message survives a Redis outage. The
webhooks worker, started as deploy/Procfile starts it, holds a retry (a countdown) when
Redis stops: before, it exited with ``Unrecoverable error: AttributeError("'NoneType'
object has no attribute 'hostname'")`` from kombu's ``restore_unacked`` (a restart in
Kubernetes), and the other worker logged "Error on restarting Gossip" with a traceback."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from celery import current_app
from django.conf import settings
from redis import Redis

from tests.conftest import needs
from tests.deploy.live import Relay, free_port, wait_for
from tests.deploy.support import ROOT, procfile, procfile_environment
from tests.integration.test_workflow_worker import worker_environment

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]


class ProcfileWorker:
    """A Procfile line's ``celery worker``, on a broker behind ``relay``, under its own
    node name (others may share this Redis) and metrics port."""

    def __init__(self, name: str, relay: Relay, var_dir: Path) -> None:
        var_dir.mkdir()
        target = urlsplit(str(settings.CELERY_BROKER_URL))
        broker = target._replace(netloc=f"127.0.0.1:{relay.port}").geturl()
        self.env = {**worker_environment(), **procfile_environment()[name]}
        self.env.update(
            CELERY_BROKER_URL=broker,
            MEMGOV_VAR_DIR=str(var_dir),
            MEMGOV_WORKER_METRICS_PORT=str(free_port()),
            MEMGOV_LOG_FORMAT="json",
        )
        self.env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        argv = procfile()[name]
        if "-n" in argv:
            argv[argv.index("-n") + 1] = f"{name}-{uuid.uuid4().hex[:8]}@%h"
        else:
            argv += ["-n", f"{name}-{uuid.uuid4().hex[:8]}@%h"]
        self.log = var_dir / "worker.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(  # noqa: S603 - our own worker, as deployed
                [sys.executable, "-m", *argv],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)  # cold: nothing runs here
            self.process.wait(timeout=30)


@pytest.fixture
def relay() -> Iterator[Relay]:
    target = urlsplit(str(settings.CELERY_BROKER_URL))
    relay = Relay((target.hostname or "127.0.0.1", target.port or 6379))
    yield relay
    relay.close()


@pytest.mark.parametrize("name", ["webhooks", "worker"])
def test_a_worker_holding_a_retry_survives_a_redis_outage_and_takes_work_after_it(
    name: str, relay: Relay, tmp_path: Path
):
    worker = ProcfileWorker(name, relay, tmp_path / "var")
    try:
        queue = "webhooks" if name == "webhooks" else "celery"
        wait_for("the worker", lambda: "ready." in worker.output(), timeout=90)
        held = current_app.send_task(
            "webhooks.tasks.deliver_due", queue=queue, routing_key=queue, countdown=600
        )
        wait_for("the retry held", lambda: f"[{held.id}] received" in worker.output(), 30)

        relay.cut(refuse=True)  # Redis stopped: open connections dropped, new ones refused
        time.sleep(15)  # several reconnection attempts
        assert worker.process.poll() is None, worker.output()[-3000:]

        relay.mend()
        wait_for("a reconnection", lambda: worker.output().count("Connected to") >= 2, 60)
        after = current_app.send_task("webhooks.tasks.deliver_due", queue=queue, routing_key=queue)
        wait_for("work after the outage", lambda: f"[{after.id}] succeeded" in worker.output(), 60)

        said = worker.output()
        assert worker.process.poll() is None
        assert "Traceback" not in said
        assert '"level":"CRITICAL"' not in said
        assert "Error on restarting" not in said
        # The held retry was not lost: it waits in the broker's unacknowledged set, which
        # gives it back after the visibility timeout (and the deliver_due sweeper asks
        # for a due webhook delivery meanwhile; its claim makes it happen once).
        broker = Redis.from_url(str(settings.CELERY_BROKER_URL))
        assert any(held.id.encode() in raw for raw in broker.hvals("unacked")), "held lost"
    finally:
        worker.stop()
