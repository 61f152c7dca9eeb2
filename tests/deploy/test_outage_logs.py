"""Issue 47, point 5: a database outage is a 503 per request (config.problems), and its log
is a summary, not a traceback per request: one WARNING line per kind of error every few
seconds, the next one saying how many were left out. Before, each 503 logged an ERROR with
a 6.3 KB traceback (21 MB in 75 s at 100 requests a second)."""

from __future__ import annotations

import io
import json
import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test import Client

import config.logs as logs
from tests.conftest import needs

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
def database_down() -> Iterator[None]:
    """The next connection goes to a port nobody listens on: refused, like a database
    that is down. The connection's own settings are the seam; restored afterwards."""
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update(HOST="127.0.0.1", PORT=str(_closed_port()))
    yield
    connection.close()
    connection.settings_dict.clear()
    connection.settings_dict.update(saved)


def test_a_database_outage_logs_a_rate_limited_summary_and_no_traceback(
    settings: Any, log_lines: io.StringIO, database_down: None
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
