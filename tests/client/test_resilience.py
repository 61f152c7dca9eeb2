"""What the client does when the network or the server is in the way: a POST retried after
a dropped answer creates one object; a 429 is retried after the server's Retry-After; a
failing gateway is retried with backoff, boundedly; a stale correction is a StaleVersion."""

from __future__ import annotations

import time

import pytest
from django.conf import settings
from django.core.cache import cache

from agent_interface.auth import PrincipalRateThrottle
from core.models import ApiKey, IdempotencyRecord
from memgov_client import RetryPolicy, ServerError, StaleVersion, Throttled, TransportFailed
from memory.models import Source
from tests.client.conftest import DropsFirstAnswer, FailingGateway, Recording


def test_a_post_whose_answer_was_lost_is_retried_with_its_key_and_creates_one_source(
    connect, sleeps
):
    network = DropsFirstAnswer()
    agent = connect("agent", transport=network)

    source = agent.record_source(kind="message", content="Deliver to 12 Elm Street.")

    assert [(s.method, s.path, s.status) for s in network.sent] == [
        ("POST", "/api/v1/sources", 201),
        ("POST", "/api/v1/sources", 201),
    ]
    first_key, second_key = (s.idempotency_key for s in network.sent)
    assert first_key and first_key == second_key
    assert list(Source.objects.values_list("pk", flat=True)) == [source["id"]]
    assert len(sleeps.waited) == 1


def test_a_retry_that_finds_the_first_attempt_still_running_waits_and_gets_its_answer(
    connect, sleeps
):
    """The answer was lost while the server was still at work: the retry is told so (409,
    idempotency-key-in-use, Retry-After), waits, and then gets the first answer."""
    network = DropsFirstAnswer()
    agent = connect("agent", transport=network)
    finished: list[int] = []

    def still_running_once() -> None:
        record = IdempotencyRecord.objects.get()
        if not finished:  # the first wait: the server is "still at work" on attempt one
            finished.append(record.response_status)
            IdempotencyRecord.objects.filter(pk=record.pk).update(response_status=0)
        else:  # the second wait: it has answered
            IdempotencyRecord.objects.filter(pk=record.pk).update(response_status=finished[0])

    sleeps.then = still_running_once

    source = agent.record_source(kind="message", content="Deliver to 12 Elm Street.")

    assert [s.status for s in network.sent] == [201, 409, 201]
    assert sleeps.waited[1] == 1.0  # the server's Retry-After, honoured exactly
    assert list(Source.objects.values_list("pk", flat=True)) == [source["id"]]


def test_every_post_gets_its_own_idempotency_key(connect):
    network = Recording()
    agent = connect("agent", transport=network)

    agent.record_source(kind="message", content="one")
    agent.record_source(kind="message", content="one")

    keys = [s.idempotency_key for s in network.sent]
    assert len(keys) == 2 and None not in keys and keys[0] != keys[1]
    assert Source.objects.count() == 2


def _empty_bucket(world, name: str) -> None:
    """The key's throttle counters, gone: as if its window had passed. Local-memory cache
    (DRF's history) and Redis (the sliding-window counters) both."""
    pk = ApiKey.objects.get(prefix=world.keys[name].split("_")[1]).pk
    base = PrincipalRateThrottle.cache_format % {"scope": "principal", "ident": f"key{pk}"}
    cache.delete(base)
    if settings.CACHE_URL:
        from django_redis import get_redis_connection

        window = int(time.time() // 60)
        get_redis_connection("default").delete(
            *(f"{base}:{w}" for w in range(window - 2, window + 2))
        )


@pytest.fixture
def one_request_per_minute(world, monkeypatch):
    monkeypatch.setattr(PrincipalRateThrottle, "THROTTLE_RATES", {"principal": "1/min"})
    _empty_bucket(world, "agent")
    yield
    _empty_bucket(world, "agent")


def _minute_passes(world, name: str):
    """What the client's sleep stands for here: the key's throttle window has passed."""
    return lambda: _empty_bucket(world, name)


def test_a_throttled_request_is_retried_after_the_servers_retry_after(
    world, connect, sleeps, one_request_per_minute
):
    network = Recording()
    agent = connect("agent", transport=network)
    agent.list_memories()
    sleeps.then = _minute_passes(world, "agent")

    page = agent.list_memories()

    assert page == {"results": [], "next": None}
    assert [s.status for s in network.sent] == [200, 429, 200]
    assert len(sleeps.waited) == 1 and 1 <= sleeps.waited[0] <= 60
    assert sleeps.waited[0] == int(sleeps.waited[0])  # the server's whole seconds, not a guess


def test_a_retry_after_longer_than_the_client_will_wait_raises_throttled(
    connect, sleeps, one_request_per_minute
):
    agent = connect("agent", retry=RetryPolicy(max_retry_after=0.5))
    agent.list_memories()

    with pytest.raises(Throttled) as caught:
        agent.list_memories()

    assert caught.value.status == 429
    assert 1 <= (caught.value.retry_after or 0) <= 60
    assert sleeps.waited == []


def test_a_failing_gateway_is_retried_with_growing_backoff(connect, sleeps):
    gateway = FailingGateway([503, 502, 504])
    agent = connect("agent", transport=gateway, retry=RetryPolicy(attempts=4, backoff=1.0))

    assert agent.health() == {"status": "ok"}
    assert [s.status for s in gateway.sent] == [503, 502, 504, 200]
    first, second, third = sleeps.waited
    assert 0.5 <= first <= 1.0 and 1.0 <= second <= 2.0 and 2.0 <= third <= 4.0


def test_retries_are_bounded_and_end_in_a_server_error(connect, sleeps):
    gateway = FailingGateway([503] * 10)
    agent = connect("agent", transport=gateway, retry=RetryPolicy(attempts=3, backoff=0.01))

    with pytest.raises(ServerError) as caught:
        agent.get_policy()

    assert caught.value.status == 503
    assert len(gateway.sent) == 3 and len(sleeps.waited) == 2


def test_a_500_is_not_retried(connect, sleeps):
    gateway = FailingGateway([500])

    with pytest.raises(ServerError):
        connect("agent", transport=gateway).get_policy()

    assert len(gateway.sent) == 1 and sleeps.waited == []


def test_a_server_that_never_answers_raises_transport_failed(world, sleeps):
    from memgov_client import Memgov

    client = Memgov(
        "http://127.0.0.1:9",  # the discard port: nothing listens
        world.keys["agent"],
        retry=RetryPolicy(attempts=2, backoff=0.01),
        sleep=sleeps,
    )

    with pytest.raises(TransportFailed) as caught:
        client.health()

    assert caught.value.status == 0 and len(sleeps.waited) == 1


def test_a_stale_correction_raises_stale_version_with_the_current_version(connect, world):
    agent = connect("agent")
    dana = agent.create_entity(kind="customer", name="Dana Kim")
    order = agent.record_source(kind="business_record", content="Order order-a: to the office.")
    read = agent.propose_memory(
        kind="task_fact",
        subject=dana["id"],
        field="delivery_address",
        value="4 Dock Road",
        statement="Order order-a goes to Dana's office.",
        scope={"task": "order-a"},
        owner="rita",
        expires_at="2099-01-01T00:00:00Z",
        sources=[order["id"]],
    )
    connect("rita").correct_memory(read["id"], read["version"], value="5 Dock Road")

    with pytest.raises(StaleVersion) as caught:
        agent.correct_memory(read["id"], read["version"], value="12 Elm Street")

    assert (caught.value.status, caught.value.current_version) == (409, 2)
    head = agent.get_memory(read["id"])
    assert (head["version"], head["value"]) == (2, "5 Dock Road")
    retried = agent.correct_memory(read["id"], caught.value.current_version, value="6 Dock Road")
    assert (retried["version"], retried["value"]) == (3, "6 Dock Road")
