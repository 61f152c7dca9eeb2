"""Issue 47, point 8: a worker's probe does not go through the broker. A real worker (the
prefork pool, as deployed) behind a relay to Redis: while Redis is cut off, the old probe
(``celery inspect ping``) fails and the new one passes, because restarting would not
bring Redis back; a worker whose main process is frozen while Redis answers fails it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings

from operations import worker_probe
from operations.liveness import HEARTBEAT_SECONDS, heartbeat_path
from tests.conftest import needs
from tests.deploy.kustomize_lite import build
from tests.deploy.live import Relay, wait_for
from tests.deploy.support import ROOT
from tests.deploy.test_kubernetes import OVERLAY, pod_specs
from tests.integration.test_workflow_worker import worker_environment

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]


class Worker:
    def __init__(self, var_dir: Path, broker: str) -> None:
        var_dir.mkdir()
        self.node = f"probe-{uuid.uuid4().hex[:8]}@{os.uname().nodename}"
        self.env = {**worker_environment(), "CELERY_BROKER_URL": broker}
        self.env["MEMGOV_VAR_DIR"] = str(var_dir)
        self.env["MEMGOV_WORKER_REMOTE_CONTROL"] = "true"  # for the old probe, ping

        self.env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        self.log = var_dir / "worker.log"
        command = [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "celery"]
        command += ["--concurrency", "1", "--without-mingle", "--without-gossip"]
        command += ["-n", self.node, "--loglevel", "INFO"]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(  # noqa: S603 - our own worker
                command, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )

    def heartbeat_age(self) -> float:
        path = Path(self.env["MEMGOV_VAR_DIR"]) / heartbeat_path(self.node).name
        try:
            return time.time() - path.stat().st_mtime
        except FileNotFoundError:
            return float("inf")

    def probe(self, stale_after: float) -> tuple[int, str]:
        done = subprocess.run(  # noqa: S603 - the probe as the manifests run it
            [sys.executable, "-m", "operations.worker_probe", self.node, str(stale_after)],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        return done.returncode, done.stdout + done.stderr

    def ping(self) -> int:
        """The old probe: ``celery inspect ping`` through the broker."""
        command = [sys.executable, "-m", "celery", "-A", "config", "inspect", "ping"]
        command += ["--destination", self.node, "--timeout", "5"]
        try:
            return subprocess.run(  # noqa: S603 - what the manifests ran before
                command, cwd=ROOT, env=self.env, capture_output=True, timeout=25, check=False
            ).returncode
        except subprocess.TimeoutExpired:
            return -1  # the probe's timeout: a failure too

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGQUIT)  # cold: nothing runs here
            self.process.wait(timeout=30)


@pytest.fixture
def relay() -> Iterator[Relay]:
    target = urlsplit(str(settings.CELERY_BROKER_URL))
    relay = Relay((target.hostname or "127.0.0.1", target.port or 6379))
    yield relay
    relay.close()


@pytest.fixture
def worker(relay: Relay, tmp_path: Path) -> Iterator[Worker]:
    target = urlsplit(str(settings.CELERY_BROKER_URL))
    worker = Worker(tmp_path / "var", target._replace(netloc=f"127.0.0.1:{relay.port}").geturl())
    yield worker
    relay.mend()
    worker.stop()


def test_a_worker_cut_off_from_redis_passes_its_probe_which_a_ping_failed(worker, relay):
    wait_for("the worker's heartbeat", lambda: worker.heartbeat_age() < 5, timeout=90)
    assert worker.ping() == 0
    assert worker.probe(stale_after=60)[0] == 0

    relay.cut()
    time.sleep(HEARTBEAT_SECONDS + 2)  # past a heartbeat, or its loop waits on the broker

    assert worker.ping() != 0  # Kubernetes restarted the pod after three of these
    code, said = worker.probe(stale_after=1)
    assert code == 0, said
    assert worker.process.poll() is None

    relay.mend()
    wait_for("a fresh heartbeat", lambda: worker.heartbeat_age() < HEARTBEAT_SECONDS, 60)


def test_a_frozen_worker_fails_its_probe_while_redis_answers(worker):
    wait_for("the worker's heartbeat", lambda: worker.heartbeat_age() < 5, timeout=90)

    worker.process.send_signal(signal.SIGSTOP)  # its loop stops, the process stays
    try:
        time.sleep(HEARTBEAT_SECONDS + 2)
        code, said = worker.probe(stale_after=HEARTBEAT_SECONDS)
    finally:
        worker.process.send_signal(signal.SIGCONT)

    assert code == 1, said
    assert "while the broker answers" in said


def test_the_worker_pods_probe_their_heartbeat_not_the_broker():
    specs = pod_specs(build(OVERLAY))

    for name, node in (
        ("memgov-worker", "celery@$HOSTNAME"),
        ("memgov-webhooks", "webhooks@$HOSTNAME"),
    ):
        [container] = specs[name]["containers"]
        for probe in ("startupProbe", "livenessProbe"):
            command = " ".join(container[probe]["exec"]["command"])
            assert "inspect ping" not in command
            assert f"operations.worker_probe {node}" in command


@pytest.mark.parametrize("argv", [[], ["--help"], ["a", "b", "c"]])
def test_the_probe_without_a_node_says_how_to_call_it(argv: list[str]) -> None:
    done = subprocess.run(  # noqa: S603 - the project's own probe
        [sys.executable, "-m", "operations.worker_probe", *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr.strip()) == (2, worker_probe.USAGE)
