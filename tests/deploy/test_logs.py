"""One JSON line per request and per task, with a request id that follows the request
into the tasks it enqueues; never the personal content, never the API key."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import operations.logs as logs
import operations.metrics as metrics
from approvals import tasks
from config.celery import app as celery_app
from operations.queues import prepare_embedded_broker
from operations.telemetry import REQUEST_ID_TASK_HEADER
from tests.deploy.test_proxy_settings import deployed_settings
from tests.resolve.conftest import Story

HOME = "12 Elm Street"


@pytest.fixture
def lines() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """What the production handler (JSON formatter, request-id filter) writes, each line
    parsed as one JSON object."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    handler.addFilter(logs.RequestIdFilter())
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    root.removeHandler(handler)
    root.setLevel(previous)


@pytest.fixture
def story(world, django_capture_on_commit_callbacks) -> Iterator[Story]:
    yield Story(world=world, on_commit=django_capture_on_commit_callbacks)


def test_a_resolve_logs_one_json_line_with_its_request_id_and_no_value_or_key(world, story, lines):
    dana = story.entity("Dana Kim", "customer")
    story.activate(
        kind="preference",
        subject=dana,
        field="delivery_address",
        value=HOME,
        statement="Dana wants deliveries at home.",
        scope={},
        expires_at=None,
    )
    key = world.keys["agent"]

    response = world.client("agent").post(
        "/api/v1/resolve",
        {"subject": dana, "context": {"task": "order-b"}},
        format="json",
        HTTP_X_REQUEST_ID="req-resolve-1",
    )

    assert response.status_code == 200
    assert response.json()["facts"][0]["value"] == HOME
    assert response["X-Request-ID"] == "req-resolve-1"
    written = lines()
    [line] = [entry for entry in written if entry.get("event") == "request"]
    assert {k: line[k] for k in ("route", "method", "status", "request_id", "level")} == {
        "route": "/api/v1/resolve",
        "method": "POST",
        "status": 200,
        "request_id": "req-resolve-1",
        "level": "INFO",
    }
    assert line["duration_ms"] >= 0
    everything = json.dumps(written)
    for secret in (HOME, "Dana", "deliveries at home", key, key.split("_")[1]):
        assert secret not in everything


@pytest.mark.parametrize("given", [None, "", "two words", "x" * 65, "line\nbreak", "é"])
def test_a_missing_or_unsafe_request_id_is_replaced_by_a_fresh_one(client, db, lines, given):
    extra = {} if given is None else {"HTTP_X_REQUEST_ID": given}

    response = client.get("/api/v1/no-such-thing", **extra)

    assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-ID"])
    [line] = [entry for entry in lines() if entry.get("event") == "request"]
    assert line["request_id"] == response["X-Request-ID"]
    assert line["route"] == "/^api(?:/|$)"  # the catch-all pattern, never the raw path


@pytest.fixture
def queue() -> Iterator[None]:
    prepare_embedded_broker()
    celery_app.conf.task_always_eager = False  # the autouse fixture restores it
    celery_app.control.purge()
    yield
    celery_app.control.purge()


def test_a_task_enqueued_by_a_request_carries_its_request_id(db, queue):
    token = logs.request_id.set("req-enqueue-7")
    try:
        tasks.expire_due_memory.delay()
    finally:
        logs.request_id.reset(token)

    waiting, message = metrics.queue_heads()["celery"]
    assert waiting == 1 and message is not None
    headers = json.loads(message)["headers"]

    assert headers[REQUEST_ID_TASK_HEADER] == "req-enqueue-7"
    assert headers["task"] == "approvals.tasks.expire_due_memory"


def test_the_task_logs_one_json_line_under_the_request_id_it_was_sent_with(db, lines):
    result = tasks.expire_due_memory.apply(headers={REQUEST_ID_TASK_HEADER: "req-from-web-3"})

    assert result.successful()
    [line] = [entry for entry in lines() if entry.get("event") == "task"]
    assert line["task"] == "approvals.tasks.expire_due_memory"
    assert line["state"] == "SUCCESS"
    assert line["request_id"] == "req-from-web-3"
    assert line["task_id"] == result.id
    assert logs.request_id.get() == "-"  # nothing leaks into what runs next


def test_the_image_s_log_format_setting_selects_json_lines():
    shown = deployed_settings(MEMGOV_LOG_FORMAT="json")
    default = deployed_settings()

    assert shown["log_formatter"] == "json"
    assert default["log_formatter"] == "plain"
