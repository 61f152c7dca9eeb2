"""Every problem answer of the contract arrives as its typed exception, carrying the
server's ``type``, ``status`` and ``detail`` (and ``errors`` for a 422)."""

from __future__ import annotations

import httpx
import pytest

from memgov_client import (
    BadRequest,
    Invalid,
    Memgov,
    MemgovError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    PreconditionRequired,
    Unauthorized,
    UnsupportedMediaType,
)
from memgov_client.errors import error_for


def test_an_unknown_key_is_unauthorized(server):
    with Memgov(server, "mgv_nope_000000") as stranger, pytest.raises(Unauthorized) as caught:
        stranger.get_policy()

    assert caught.value.status == 401
    assert caught.value.type == "https://memgov.dev/problems/unauthorized"
    assert caught.value.detail


def test_invalid_content_names_each_field(connect):
    agent = connect("agent")

    with pytest.raises(Invalid) as caught:
        agent.propose_memory(
            kind="task_fact",
            subject="ent_missing",
            field="delivery_address",
            value="4 Dock Road",
            statement="Order order-a goes to the office.",
            scope={},
            owner="nobody",
            expires_at=None,
        )

    assert caught.value.status == 422
    assert {"scope", "owner"} <= set(caught.value.errors)
    assert all(caught.value.errors[name] for name in ("scope", "owner"))


def test_a_naive_time_is_refused_by_the_server_not_guessed(connect):
    from datetime import datetime

    with pytest.raises(Invalid) as caught:
        connect("agent").record_source(
            kind="message",
            content="hello",
            occurred_at=datetime(2026, 1, 1, 9, 0),  # noqa: DTZ001 - naive on purpose
        )

    assert "occurred_at" in caught.value.errors


def test_a_body_over_the_limit_is_payload_too_large(connect):
    with pytest.raises(PayloadTooLarge) as caught:
        connect("agent").record_source(kind="document", content="x" * (300 * 1024))

    assert caught.value.status == 413


def test_an_absent_memory_is_not_found(connect):
    with pytest.raises(NotFound) as caught:
        connect("agent").get_memory("mem_does_not_exist")

    assert caught.value.status == 404 and isinstance(caught.value, MemgovError)


@pytest.mark.parametrize(
    ("method", "path", "headers", "content", "expected", "status"),
    [
        ("POST", "/api/v1/sources", {"Content-Type": "application/json"}, b"{", BadRequest, 400),
        ("DELETE", "/api/v1/sources/src_x", {}, None, MethodNotAllowed, 405),
        (
            "POST",
            "/api/v1/sources",
            {"Content-Type": "text/plain"},
            b"hi",
            UnsupportedMediaType,
            415,
        ),
    ],
)
def test_raw_answers_map_to_their_exceptions(
    world, server, method, path, headers, content, expected, status
):
    """Answers the client's own methods never provoke (it always sends JSON and If-Match)
    still map to their types: these are the server's real answers to raw requests."""
    auth = {"Authorization": f"Bearer {world.keys['agent']}", **headers}
    response = httpx.request(method, server + path, headers=auth, content=content)

    error = error_for(response)

    assert (type(error), error.status) == (expected, status)
    assert error.type.startswith("https://memgov.dev/problems/")


def test_a_correction_without_if_match_is_precondition_required(world, server, connect):
    agent = connect("agent")
    dana = agent.create_entity(kind="customer", name="Dana Kim")
    chat = agent.record_source(kind="message", content="I want deliveries at home.")
    memory = agent.propose_memory(
        kind="preference",
        subject=dana["id"],
        field="delivery_address",
        value="12 Elm Street",
        statement="Dana wants deliveries at home.",
        scope={},
        owner="nora",
        expires_at=None,
        sources=[chat["id"]],
    )
    response = httpx.post(
        f"{server}/api/v1/memories/{memory['id']}/versions",
        headers={"Authorization": f"Bearer {world.keys['agent']}"},
        json={"value": "4 Dock Road"},
    )

    error = error_for(response)

    assert isinstance(error, PreconditionRequired) and error.status == 428
