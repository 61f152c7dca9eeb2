"""Requests to ``/mcp`` never pass Django's middleware; the ASGI wrapper in front of the
MCP server gives them what every other request gets: a request id echoed back, one JSON
log line and a latency sample, under the route ``/mcp``."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import pytest
from prometheus_client import REGISTRY

from operations.telemetry import AsgiRequestTelemetry

SAMPLE = "memgov_http_request_duration_seconds_count"


def _samples(status: str) -> float:
    labels = {"route": "/mcp", "method": "POST", "status": status}
    return REGISTRY.get_sample_value(SAMPLE, labels) or 0.0


async def _accepted(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 202, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _broken(scope: Any, receive: Any, send: Any) -> None:
    raise RuntimeError("the MCP server failed before answering")


def _call(app: Any, headers: list[tuple[bytes, bytes]]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    # In a thread of its own: Playwright's sync API (the browser tests) leaves an event
    # loop running in the main thread.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(anyio.run, app, scope, receive, send).result()
    return sent


def _request_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [r.memgov for r in caplog.records if r.name == "memgov.request"]  # type: ignore[attr-defined]


def test_an_mcp_request_keeps_the_callers_request_id_and_is_logged_and_timed(caplog):
    caplog.set_level(logging.INFO, logger="memgov.request")
    before = _samples("202")

    sent = _call(AsgiRequestTelemetry(_accepted, "/mcp"), [(b"x-request-id", b"agent-7f3a")])

    assert (b"x-request-id", b"agent-7f3a") in sent[0]["headers"]
    [line] = _request_lines(caplog)
    assert (line["route"], line["method"], line["status"]) == ("/mcp", "POST", 202)
    assert line["duration_ms"] >= 0
    assert _samples("202") == before + 1


def test_an_mcp_request_without_an_id_gets_one_and_a_failure_is_logged_as_a_500(caplog):
    caplog.set_level(logging.INFO, logger="memgov.request")
    made = dict(_call(AsgiRequestTelemetry(_accepted, "/mcp"), [])[0]["headers"])[b"x-request-id"]
    before = _samples("500")

    with pytest.raises(RuntimeError):
        _call(AsgiRequestTelemetry(_broken, "/mcp"), [(b"x-request-id", b"bad id\n")])

    assert len(made) == 32  # made here: a uuid4 in hex
    assert [line["status"] for line in _request_lines(caplog)] == [202, 500]
    assert _samples("500") == before + 1


def test_the_site_serves_mcp_through_the_wrapper():
    from config.wsgi import mcp_with_telemetry  # starts the MCP server's event loop

    assert isinstance(mcp_with_telemetry, AsgiRequestTelemetry)
    assert mcp_with_telemetry.route == "/mcp"
