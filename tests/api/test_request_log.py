"""A refused request is one log line (the request line with its status), not two: Django's
own ``django.request`` warning for 4xx is dropped; its 5xx errors are kept."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from operations.logs import ServerErrorsOnly


def test_a_404_is_logged_once(db, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO)

    response = Client().get("/memories/mem_nothing_here/")

    assert response.status_code in (302, 404)
    missing = Client().get("/api/v1/memories/mem_nothing_here")
    assert missing.status_code in (401, 404)
    lines = [
        r
        for r in caplog.records
        if "mem_nothing_here" in r.getMessage()
        or (r.name == "memgov.request" and str(missing.status_code) in r.getMessage())
    ]
    assert [r.name for r in lines] == ["memgov.request"]


def test_a_server_error_still_reaches_the_log():
    keep = ServerErrorsOnly()
    record = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "boom", (), None)
    record.status_code = 500
    assert keep.filter(record)
    record.status_code = 404
    assert not keep.filter(record)
