"""A warm resolve sends the throttle's script and the cache's read script to Redis in one
round trip (a pipeline of plain EVALSHA, no SCRIPT EXISTS first), and keeps what each
promised alone: the request is counted, a refused one is refused, a script Redis lost is
loaded again, and the answer read ahead is the one served."""

from __future__ import annotations

from typing import Any

import pytest
import redis.connection

from agent_interface.auth import PrincipalRateThrottle
from core import redis_client
from tests.cache.builders import addresses, assert_active, dana, propose_address
from tests.conftest import needs

pytestmark = [needs("redis")]


def _round_trips(monkeypatch: pytest.MonkeyPatch, request: Any) -> int:
    """What this process sent Redis during ``request``, in round trips: redis-py sends a
    command, or a whole pipeline, with one ``send_packed_command`` (counted, then run)."""
    sent = 0
    send = redis.connection.AbstractConnection.send_packed_command

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal sent
        sent += 1
        send(self, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(redis.connection.AbstractConnection, "send_packed_command", counted)
        request()
    return sent


@pytest.fixture
def warm(private_redis, world, django_capture_on_commit_callbacks) -> tuple[Any, str]:
    subject = dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        version = propose_address(world, subject)
    assert_active(version)
    agent = world.client("agent")
    assert agent.post("/api/v1/resolve", {"subject": subject}, format="json").status_code == 200
    return agent, subject


def test_a_warm_resolve_is_one_round_trip_to_redis(private_redis, warm, monkeypatch):
    agent, subject = warm
    answers: list[Any] = []

    trips = _round_trips(
        monkeypatch,
        lambda: answers.append(agent.post("/api/v1/resolve", {"subject": subject}, format="json")),
    )

    assert answers[0].status_code == 200
    assert addresses(answers[0].json()) == ["12 Elm Street"]
    assert redis_client.stats["hits"] == 1
    assert trips == 1
    commands = private_redis.client().info("commandstats")
    assert "cmdstat_script|exists" not in commands


def test_the_request_read_ahead_is_still_counted_and_refused_over_the_rate(
    private_redis, warm, monkeypatch
):
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "4/min", raising=False)
    agent, subject = warm  # one request counted already

    statuses = [
        agent.post("/api/v1/resolve", {"subject": subject}, format="json").status_code
        for _ in range(4)
    ]

    assert statuses == [200, 200, 200, 429]


def test_scripts_redis_lost_are_loaded_again_and_the_request_counted(private_redis, warm):
    agent, subject = warm
    private_redis.client().script_flush()

    response = agent.post("/api/v1/resolve", {"subject": subject}, format="json")

    assert response.status_code == 200
    assert addresses(response.json()) == ["12 Elm Street"]
    assert redis_client.stats["hits"] == 1
    counted = [
        int(private_redis.client().get(name) or 0)
        for name in private_redis.client().keys("throttle_principal_*")
    ]
    assert sum(counted) == 2  # warm's resolve and the one above


def test_an_invalid_resolve_read_ahead_is_still_the_same_422(private_redis, warm):
    agent, _ = warm

    response = agent.post("/api/v1/resolve", {"subject": 7, "contxt": {}}, format="json")

    assert response.status_code == 422
    assert sorted(response.json()["errors"]) == ["contxt", "subject"]


def test_a_body_that_is_not_json_read_ahead_is_still_a_400(private_redis, warm):
    agent, _ = warm

    response = agent.post("/api/v1/resolve", '{"subject":', content_type="application/json")

    assert response.status_code == 400
