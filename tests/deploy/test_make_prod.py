"""``make prod`` on this machine, as an operator runs it: gunicorn, a Celery worker and
beat from deploy/Procfile under scripts/supervise.py, DEBUG off, on PostgreSQL and Redis.
The delivery story of seed 002 runs over HTTP against it; then the worker gets SIGTERM
while a gate run is in flight, and the run still ends in exactly one activation."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from audit.models import AuditEvent
from config.celery import app as celery_app
from memory.lifecycle import activation_lock_key
from memory.models import MemoryVersion, Status
from tests.conftest import World, child_processes, iso, later, needs
from tests.deploy.support import ROOT
from tests.integration.test_workflow_worker import _test_database_url

pytestmark = [
    needs("redis"),
    needs("postgres"),
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
]


def _waits_for_advisory_lock(holder: psycopg.Connection[Any]) -> bool:
    """Another session (the worker's gate run) is queued behind the lock the test holds."""
    row = holder.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    ).fetchone()
    return bool(row and row[0])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(what: str, condition: Callable[[], bool], timeout: float = 45.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.2)


@dataclass
class Prod:
    process: subprocess.Popen[bytes]
    base: str
    log: Path
    metrics_ports: dict[str, int]  # role -> its worker metrics port

    def task_runs(self, role: str) -> dict[str, float]:
        """Runs per task on the role's own metrics port (issue 36, point 8: on by default)."""
        url = f"http://127.0.0.1:{self.metrics_ports[role]}/metrics"
        with urllib.request.urlopen(url, timeout=5) as answer:
            text = answer.read().decode()
        return {
            sample.labels["task"]: sample.value
            for family in text_string_to_metric_families(text)
            if family.name == "memgov_celery_task_duration_seconds"
            for sample in family.samples
            if sample.name.endswith("_count") and sample.labels["state"] == "SUCCESS"
        }

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def call(
        self, key: str, method: str, path: str, body: Any = None, **headers: str
    ) -> tuple[int, Any]:
        request = urllib.request.Request(  # noqa: S310 - our own loopback server
            f"{self.base}/api/v1{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
            | headers,
        )
        try:
            with urllib.request.urlopen(request, timeout=20) as response:  # noqa: S310
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def ok(
        self, key: str, method: str, path: str, body: Any = None, status: int = 200, **headers: str
    ) -> Any:
        got, answer = self.call(key, method, path, body, **headers)
        assert got == status, (got, answer)
        return answer

    def answers(self) -> bool:
        assert self.process.poll() is None, self.output()
        try:
            with urllib.request.urlopen(f"{self.base}/readyz", timeout=2):  # noqa: S310
                return True
        except OSError:
            return False

    def worker_pid(self) -> int:
        """The Celery worker's main process among the supervisor's children (what Kubernetes
        would signal as the container's PID 1)."""
        for pid in _descendants(self.process.pid):
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            celery = any(part.endswith(b"celery") for part in command)
            # The workflow's worker, not the webhook deliveries' (``-Q webhooks``).
            if celery and b"worker" in command and b"webhooks" not in command:
                return pid
        raise AssertionError("no celery worker under make prod:\n" + self.output())


def _descendants(pid: int) -> list[int]:
    return [d for child in child_processes(pid) for d in (child, *_descendants(child))]


def _forget_queued_tasks() -> None:
    celery_app.control.purge()


@pytest.fixture
def prod(world: World, tmp_path: Path) -> Iterator[Prod]:
    _forget_queued_tasks()
    port = free_port()
    # Each worker role its own port (the Procfile's defaults are 9808 and 9809; free ones
    # here, as other tests may run make prod beside this one).
    metrics_ports = {"worker": free_port(), "webhooks": free_port()}
    log = tmp_path / "make-prod.log"
    env = {
        **os.environ,
        "DATABASE_URL": _test_database_url(),
        "REDIS_URL": str(settings.REDIS_URL),
        "CACHE_URL": str(settings.CACHE_URL),
        "CELERY_BROKER_URL": str(settings.CELERY_BROKER_URL),
        "SECRET_KEY": "make-prod-smoke-test-secret",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "2",
        "MEMGOV_WORKER_CONCURRENCY": "1",
        "MEMGOV_VAR_DIR": str(tmp_path),
        "SITE_URL": f"http://127.0.0.1:{port}",
        "EMAIL_URL": "dummy://",
        "MEMGOV_THROTTLE_RATE": "100000/min",
        "MEMGOV_WORKER_METRICS_PORT": str(metrics_ports["worker"]),
        "MEMGOV_WEBHOOK_METRICS_PORT": str(metrics_ports["webhooks"]),
    }
    env.pop("DEBUG", None)
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["make", "--no-print-directory", "-o", ".venv/.installed-runtime", "prod"],  # noqa: S607 - the project's own Makefile target, make from PATH
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Prod(
        process=process, base=f"http://127.0.0.1:{port}", log=log, metrics_ports=metrics_ports
    )
    try:
        wait_for("make prod to answer /readyz", server.answers, timeout=60)
        yield server
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        _forget_queued_tasks()


def _status(prod: Prod, key: str, memory_id: str) -> str:
    return str(prod.ok(key, "GET", f"/memories/{memory_id}")["status"])


def _active(prod: Prod, key: str, memory_id: str) -> None:
    wait_for(f"{memory_id} to be active", lambda: _status(prod, key, memory_id) == "active")


def test_make_prod_serves_the_delivery_story_and_finishes_a_task_through_sigterm(
    world: World, prod: Prod
):
    agent, rita = world.keys["agent"], world.keys["rita"]
    # Given Dana's home preference and the office instruction for order-a, both through
    # the real gate (the worker) and a reviewer's approval over HTTP.
    dana = prod.ok(agent, "POST", "/entities", {"kind": "customer", "name": "Dana Kim"}, 201)["id"]
    said = prod.ok(agent, "POST", "/sources", {"kind": "message", "content": "Home, please."}, 201)
    home = prod.ok(
        agent,
        "POST",
        "/memories",
        {
            "kind": "preference",
            "subject": dana,
            "field": "delivery_address",
            "value": "12 Elm Street",
            "statement": "Dana wants deliveries at home.",
            "scope": {},
            "owner": "rita",
            "expires_at": None,
            "sources": [said["id"]],
        },
        201,
    )
    order = prod.ok(
        agent,
        "POST",
        "/sources",
        {"kind": "business_record", "content": "Order order-a: deliver to 4 Dock Road."},
        201,
    )
    office = prod.ok(
        agent,
        "POST",
        "/memories",
        {
            "kind": "task_fact",
            "subject": dana,
            "field": "delivery_address",
            "value": "4 Dock Road",
            "statement": "Order order-a goes to Dana's office.",
            "scope": {"task": "order-a"},
            "owner": "rita",
            "expires_at": iso(later(1)),
            "sources": [order["id"]],
        },
        201,
    )
    assert office["status"] == "pending_review"
    prod.ok(rita, "POST", f"/memories/{office['id']}/approve", {"comment": "order record"})
    _active(prod, agent, home["id"])
    _active(prod, agent, office["id"])

    # When the agent resolves for order-a (recording the task) and for order-b.
    body = {"subject": dana, "context": {"task": "order-a"}, "task_id": "dispatch-order-a"}
    for_a = prod.ok(agent, "POST", "/resolve", body)
    for_b = prod.ok(agent, "POST", "/resolve", {"subject": dana, "context": {"task": "order-b"}})

    # Then the office wins for order-a only.
    assert [(f["value"], f["memory_id"]) for f in for_a["facts"]] == [("4 Dock Road", office["id"])]
    assert [f["value"] for f in for_b["facts"]] == ["12 Elm Street"]

    # When the reviewer retires the instruction, the task is flagged and home wins again.
    retired = prod.ok(
        rita, "POST", f"/memories/{office['id']}/retire", {"reason": "order cancelled"}
    )
    assert retired["flagged_tasks"] == ["dispatch-order-a"]
    after = prod.ok(agent, "POST", "/resolve", {"subject": dana, "context": {"task": "order-a"}})
    assert [f["value"] for f in after["facts"]] == ["12 Elm Street"]
    assert prod.ok(agent, "GET", "/tasks/dispatch-order-a")["needs_reverification"] is True

    # And each worker served its own metrics on its own port: the gate runs its pool ran
    # on the workflow worker's, none on the webhook deliveries' worker's.
    assert prod.task_runs("worker").get("approvals.tasks.run_gate_checks", 0) >= 2
    assert "approvals.tasks.run_gate_checks" not in prod.task_runs("webhooks")

    # When a new preference's gate run is in flight (held at its activation lock, which
    # the test takes first) and the worker is told to stop.
    holder = psycopg.connect(_test_database_url(), autocommit=False)
    key = activation_lock_key(world.tenant.pk, dana, "contact_channel")
    holder.execute("SELECT pg_advisory_xact_lock(%s)", [key])
    channel = prod.ok(
        agent,
        "POST",
        "/memories",
        {
            "kind": "preference",
            "subject": dana,
            "field": "contact_channel",
            "value": "sms",
            "statement": "Dana prefers text messages.",
            "scope": {},
            "owner": "rita",
            "expires_at": None,
            "sources": [said["id"]],
        },
        201,
        **{"X-Request-ID": "smoke-channel-1"},
    )
    wait_for("the gate run to be in flight", lambda: _waits_for_advisory_lock(holder))
    os.kill(prod.worker_pid(), signal.SIGTERM)
    wait_for("the worker to begin its warm shutdown", lambda: "Warm shutdown" in prod.output())
    holder.rollback()  # the run may go on now
    holder.close()
    # The supervisor (scripts/supervise.py) starts the worker again once it has left.
    wait_for("the worker to leave", lambda: "supervise: worker exited" in prod.output())

    # Then the worker finished the run before leaving: active, activated exactly once.
    version = MemoryVersion.objects.get(item_id=channel["id"], number=1)
    assert version.status == Status.ACTIVE
    assert AuditEvent.objects.filter(target_id=channel["id"], action="memory.active").count() == 1
    # And the worker's JSON line for that run carries the id of the request that caused it.
    output = prod.output()
    task_lines = [
        json.loads(line.split("| ", 1)[1])
        for line in output.splitlines()
        if "worker.1" in line and '"event":"task"' in line
    ]
    gate = [t for t in task_lines if t["request_id"] == "smoke-channel-1"]
    assert [(t["task"], t["state"]) for t in gate] == [
        ("approvals.tasks.run_gate_checks", "SUCCESS")
    ]
    assert output.index("Warm shutdown") < output.rindex("succeeded in")
