"""Issue 11, point 5, end to end: gunicorn de-chunks a request without Content-Length, and
the input boundary reads it under the same 256 KiB limit instead of seeing no body, on the
web role as deployed: for Django (``gateway.boundary.InputBoundaryMiddleware``) and for the
MCP server at ``/mcp`` (``gateway.boundary.WsgiBodyBoundary``)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cache.conftest import Gunicorn, RedisServer
from tests.conftest import needs

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def gunicorn_server(
    redis_server: RedisServer, django_db_setup: Any, django_db_blocker: Any
) -> Iterator[Gunicorn]:
    server = Gunicorn(redis_server.url)
    yield server
    server.stop()


def _chunks(body: bytes, size: int = 8192) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


def _post_chunked(
    server: Gunicorn, key: str, body: bytes, path: str = "/api/v1/sources"
) -> tuple[int, dict[str, Any]]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request(
        "POST",
        path,
        body=_chunks(body),
        headers={
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        encode_chunked=True,
    )
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    return response.status, answer


def test_a_chunked_valid_body_is_recorded(private_redis, gunicorn_server, world):
    body = json.dumps({"kind": "message", "content": "Sent in chunks."}).encode()

    status, answer = _post_chunked(gunicorn_server, world.keys["agent"], body)

    assert status == 201, answer
    assert answer["content"] == "Sent in chunks."


def test_a_chunked_body_of_300_kib_is_a_413(private_redis, gunicorn_server, world):
    body = json.dumps({"kind": "message", "content": "x" * (300 * 1024)}).encode()

    status, answer = _post_chunked(gunicorn_server, world.keys["agent"], body)

    assert status == 413, answer
    assert answer["status"] == 413


def test_a_chunked_mcp_message_is_answered(private_redis, gunicorn_server, world):
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()

    status, answer = _post_chunked(gunicorn_server, world.keys["agent"], ping, path="/mcp")

    assert status == 200, answer
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_a_chunked_mcp_message_of_300_kib_is_a_413(private_redis, gunicorn_server, world):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "x": "x" * 300_000})

    status, answer = _post_chunked(gunicorn_server, world.keys["agent"], body.encode(), "/mcp")

    assert status == 413, answer
    assert answer["status"] == 413
