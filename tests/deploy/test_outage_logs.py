"""Issue 47, point 5: a database outage is a 503 per request (agent_interface.problems), and its log
is a summary, not a traceback per request: one WARNING line per kind of error every few
seconds, the next one saying how many were left out. Before, each 503 logged an ERROR with
a 6.3 KB traceback (21 MB in 75 s at 100 requests a second)."""

from __future__ import annotations

import io
import json
import logging
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import current_app
from django.db import connection
from django.test import Client

import operations.logs as logs
from operations.health import check_dependencies
from tests.conftest import needs
from tests.deploy.live import wait_for
from tests.deploy.support import ROOT
from tests.integration.test_workflow_worker import worker_environment

pytestmark = [needs("postgres"), pytest.mark.django_db(transaction=True)]

INTERVAL = 1.0
PATH = "/admin/"  # any page that reads the database (the API's would also be a 503)


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """What the production handler (JSON formatter, request-id filter) writes."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    handler.addFilter(logs.RequestIdFilter())
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield stream
    root.removeHandler(handler)
    root.setLevel(previous)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when the block ends


@pytest.fixture
def database_down() -> Iterator[Callable[[], None]]:
    """The next connection goes to a port nobody listens on: refused, like a database
    that is down. The connection's own settings are the seam; the outage ends when the
    test calls what this yields, or afterwards."""
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update(HOST="127.0.0.1", PORT=str(_closed_port()))

    def mend() -> None:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)

    yield mend
    mend()


def test_a_database_outage_logs_a_rate_limited_summary_and_no_traceback(
    settings: Any, log_lines: io.StringIO, database_down: Callable[[], None]
):
    settings.MEMGOV_OUTAGE_LOG_INTERVAL_SECONDS = INTERVAL
    client = Client(raise_request_exception=False)
    client.cookies["sessionid"] = "a-session-the-database-would-hold"  # read on each request

    started = time.monotonic()
    statuses = [client.get(PATH).status_code for _ in range(100)]
    took = time.monotonic() - started
    time.sleep(INTERVAL + 0.1)
    statuses.append(client.get(PATH).status_code)

    assert set(statuses) == {503}
    written = log_lines.getvalue()
    assert "Traceback" not in written
    records = [json.loads(line) for line in written.splitlines()]
    outage = [r for r in records if r["logger"] == "django.request"]
    assert all("exception" not in r for r in records)
    assert all(r["level"] == "WARNING" for r in outage), outage
    assert all(f"database unavailable (503 {PATH})" in r["message"] for r in outage)
    # One line per interval at most (and the one after the pause), not one per request.
    assert 1 <= len(outage) <= took / INTERVAL + 2, outage
    assert "OperationalError" in outage[0]["message"]
    assert "not logged" in outage[-1]["message"], outage[-1]
    left_out = sum(
        int(r["message"].rsplit("; ", 1)[1].split()[0])
        for r in outage
        if "not logged" in r["message"]
    )
    assert left_out >= len(statuses) - len(outage)  # every 503 is on a line or counted


@pytest.fixture
def console_lines() -> Iterator[io.StringIO]:
    """The production console handler's filters (operations.logs.logging_config), on a stream."""
    configured = logs.logging_config(json_lines=True, level="INFO")["handlers"]["console"]
    assert configured["filters"] == ["request_id", "database_outage_summary"]
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    handler.addFilter(logs.RequestIdFilter())
    handler.addFilter(logs.DatabaseOutageSummary())
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logs.OUTAGES.ended()  # nothing left over from another test of this process
    yield stream
    root.removeHandler(handler)
    root.setLevel(previous)


def _refused_query() -> BaseException:
    try:
        connection.ensure_connection()
    except Exception as error:  # the error a task would have raised
        return error
    raise AssertionError("the database answered")


def test_probes_tasks_and_requests_share_one_summary_and_the_count_comes_when_it_answers(
    settings: Any, console_lines: io.StringIO, database_down: Callable[[], None]
):
    settings.MEMGOV_OUTAGE_LOG_INTERVAL_SECONDS = 60.0
    client = Client(raise_request_exception=False)
    client.cookies["sessionid"] = "a-session-the-database-would-hold"

    probes = [check_dependencies()[0] for _ in range(10)]
    requests = [client.get(PATH).status_code for _ in range(10)]
    for number in range(5):  # what celery.app.trace logs for a periodic task that failed
        logging.getLogger("celery.app.trace").error(
            "Task %(name)s[%(id)s] raised unexpected: %(exc)s",
            {"name": "approvals.tasks.sweep_outbox", "id": f"t{number}", "exc": "..."},
            exc_info=_refused_query(),
        )
    during = [json.loads(line) for line in console_lines.getvalue().splitlines()]
    connection.close()

    assert set(probes) == {503} and set(requests) == {503}
    assert "Traceback" not in console_lines.getvalue()
    outage = [r for r in during if r["message"].startswith("database unavailable")]
    # One kind of error (refused), one line for the probes, the requests and the tasks.
    assert len(outage) == 1, outage
    assert outage[0]["level"] == "WARNING"
    assert outage[0]["message"].startswith("database unavailable (readiness check database")

    database_down()  # it answers again: the next connection says what was refused
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    with connection.cursor() as cursor:  # an open connection: nothing more to say
        cursor.execute("SELECT 1")

    after = [json.loads(line) for line in console_lines.getvalue().splitlines()][len(during) :]
    said = [r["message"] for r in after if "answers again" in r["message"]]
    assert said == [
        "database answers again; 25 requests refused meanwhile (24 not logged: 24 "
        f"OperationalError: {outage[0]['message'].split('OperationalError: ', 1)[1]})"
    ]


@needs("redis")
def test_a_worker_whose_database_is_down_logs_its_failed_tasks_as_one_line(tmp_path: Path):
    """Issue 47 follow-up, point 2: ``sweep_outbox``, ``expire_due_memory`` and
    ``deliver_due`` each logged an ERROR with a 5.8 KB traceback per run."""
    log = tmp_path / "worker.log"
    env = {
        **worker_environment(),
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:{_closed_port()}/gone",
        "MEMGOV_LOG_FORMAT": "json",
        "MEMGOV_VAR_DIR": str(tmp_path),
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    queue = f"outage-{uuid.uuid4().hex[:8]}"  # this worker's alone
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queue]
    command += ["-n", f"{queue}@%h", "--concurrency", "1", "--without-gossip", "--without-mingle"]
    with log.open("wb") as out:
        worker = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)  # noqa: S603
    try:
        wait_for("the worker", lambda: "ready" in log.read_text(), timeout=90)
        for task in ("approvals.tasks.sweep_outbox", "webhooks.tasks.deliver_due") * 3:
            current_app.send_task(task, queue=queue, routing_key=queue)
        wait_for("six failures", lambda: log.read_text().count('"state":"FAILURE"') == 6, 90)
    finally:
        worker.terminate()
        worker.wait(timeout=30)

    said = log.read_text()
    lines = [json.loads(line) for line in said.splitlines() if line.startswith("{")]
    outage = [r for r in lines if r["message"].startswith("database unavailable")]
    assert "Traceback" not in said
    assert all("exception" not in r for r in lines)
    assert len(outage) == 1, outage  # one kind of error, within the interval
    assert outage[0]["message"].startswith("database unavailable (task approvals.tasks.")
    assert "Connection refused" in outage[0]["message"]
