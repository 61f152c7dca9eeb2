"""Throttling is per API key: an agent in a loop gets 429 with ``Retry-After`` and
everyone else keeps working.

DRF copies ``DEFAULT_THROTTLE_RATES`` into ``SimpleRateThrottle.THROTTLE_RATES`` when the
class is defined, so overriding the setting in a test changes nothing; the test patches
that class attribute instead (each request's throttle reads it in ``__init__``)."""

from __future__ import annotations

import time

import pytest
from django.conf import settings
from django.core.cache import cache
from rest_framework.settings import api_settings

from agent_interface.auth import PrincipalRateThrottle
from core.models import ApiKey
from tests.api.support import Written, assert_problem


def _forget(raw_key: str) -> None:
    """Start each key with an empty bucket (ids repeat between test runs; buckets persist
    in Redis for two periods)."""
    pk = ApiKey.objects.get(prefix=raw_key.split("_")[1]).pk
    base = PrincipalRateThrottle.cache_format % {"scope": "principal", "ident": f"key{pk}"}
    cache.delete(base)
    if settings.CACHE_URL:
        from django_redis import get_redis_connection

        window = int(time.time() // 60)
        redis = get_redis_connection("default")
        redis.delete(*(f"{base}:{w}" for w in range(window - 2, window + 2)))


@pytest.fixture
def three_per_minute(world, monkeypatch):
    monkeypatch.setattr(PrincipalRateThrottle, "THROTTLE_RATES", {"principal": "3/min"})
    for name in ("agent", "nora", "rita"):
        _forget(world.keys[name])
    yield
    for name in ("agent", "nora", "rita"):
        _forget(world.keys[name])


def test_the_fourth_request_in_a_minute_is_a_429_with_retry_after(world, three_per_minute):
    agent = world.client("agent")

    statuses = [agent.get("/api/v1/memories").status_code for _ in range(3)]
    throttled = agent.get("/api/v1/memories")

    assert statuses == [200, 200, 200]
    assert_problem(throttled, 429)
    assert 1 <= int(throttled["Retry-After"]) <= 60


def test_a_throttled_write_writes_nothing(world, three_per_minute):
    agent = world.client("agent")
    for _ in range(3):
        agent.get("/api/v1/memories")
    given = Written.now()

    response = agent.post("/api/v1/sources", {"kind": "message", "content": "again"}, "json")

    assert_problem(response, 429)
    assert Written.now() == given


def test_other_keys_of_the_tenant_are_not_slowed_by_one_busy_key(world, three_per_minute):
    agent = world.client("agent")
    for _ in range(4):
        agent.get("/api/v1/memories")
    assert agent.get("/api/v1/memories").status_code == 429

    assert [world.client("nora").get("/api/v1/memories").status_code for _ in range(3)] == [200] * 3
    assert world.client("rita").get("/api/v1/audit/verify").status_code == 200


def test_the_default_rate_lets_a_normal_agent_work(world):
    """6000/min unless ``MEMGOV_THROTTLE_RATE`` says otherwise: ten calls are nowhere near."""
    _forget(world.keys["agent"])
    agent = world.client("agent")

    assert [agent.get("/api/v1/memories").status_code for _ in range(10)] == [200] * 10
    rates: dict[str, str] = api_settings.user_settings["DEFAULT_THROTTLE_RATES"]
    assert PrincipalRateThrottle().rate == rates["principal"]
