"""The other users of the cache's Redis on the hot path: the per-key throttle, and agent
keys remembered in-process but refused on the first request after their revocation."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from core.models import ApiKey
from core.principals import Principal
from memory import cache, keys, ratelimit, tenancy
from memory.auth import PrincipalRateThrottle
from tests.cache.builders import addresses, assert_active, dana, message, propose_address
from tests.cache.conftest import free_port
from tests.conftest import needs

pytestmark = [needs("redis")]


def _key_row(raw: str) -> ApiKey:
    return ApiKey.objects.get(prefix=raw.split("_")[1])


def _remembered_long_ago() -> None:
    """Every remembered key as if loaded ``REMEMBER_SECONDS`` ago: its next use reloads it."""
    for remembered in keys._remembered.values():
        remembered.loaded_at -= keys.REMEMBER_SECONDS


def test_an_agent_over_its_rate_gets_429_with_retry_after_and_others_are_not_slowed(
    private_redis, world, monkeypatch
):
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "3/min", raising=False)
    agent, rita = world.client("agent"), world.client("rita")

    statuses = [agent.get("/api/v1/policy").status_code for _ in range(4)]
    refused = agent.get("/api/v1/policy")
    others = rita.get("/api/v1/policy")

    assert statuses == [200, 200, 200, 429]
    assert refused.status_code == 429
    assert refused["Content-Type"] == "application/problem+json"
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert others.status_code == 200


def test_concurrent_requests_cannot_exceed_the_rate_together(private_redis, world, monkeypatch):
    """DRF's default rewrites one list per key, so concurrent requests lost each other's
    entries and more got through; the Redis counter is incremented atomically."""
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "10/min", raising=False)
    principal = Principal(
        tenant=world.tenant,
        name="agent:bot",
        labels=frozenset(),
        api_key=_key_row(world.keys["agent"]),
    )
    request = SimpleNamespace(auth=principal)
    verdicts: list[bool] = []
    start = threading.Barrier(25)

    def ask() -> None:
        start.wait()
        verdicts.append(PrincipalRateThrottle().allow_request(request, None))  # type: ignore[arg-type]

    threads = [threading.Thread(target=ask) for _ in range(25)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(verdicts) == [False] * 15 + [True] * 10


def test_the_throttle_lets_requests_through_while_redis_is_unreachable(
    private_redis, world, settings, monkeypatch
):
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "1/min", raising=False)
    settings.CACHES = {
        "default": {**settings.CACHES["default"], "LOCATION": f"redis://127.0.0.1:{free_port()}/1"}
    }
    agent = world.client("agent")

    statuses = [agent.get("/api/v1/policy").status_code for _ in range(3)]

    assert statuses == [200, 200, 200]
    assert cache.stats["throttle_failures"] == 1  # then a cooldown: Redis is not asked again


def test_a_remembered_agent_key_costs_one_query_and_is_refused_once_revoked(
    private_redis, world, django_capture_on_commit_callbacks, django_assert_num_queries
):
    agent = world.client("agent")
    assert agent.get("/api/v1/policy").status_code == 200
    with django_assert_num_queries(2):  # is the key live (and its labels), the policy
        assert agent.get("/api/v1/policy").status_code == 200

    with django_capture_on_commit_callbacks(execute=True):
        tenancy.api_key_revoke(key=_key_row(world.keys["agent"]))
    refused = agent.get("/api/v1/policy")

    assert refused.status_code == 401
    assert keys._remembered == {}


def test_a_key_revoked_behind_the_services_back_is_refused_on_its_next_request(
    private_redis, world
):
    agent = world.client("agent")
    assert agent.get("/api/v1/policy").status_code == 200
    assert len(keys._remembered) == 1

    ApiKey.objects.filter(pk=_key_row(world.keys["agent"]).pk).update(revoked_at=timezone.now())

    assert agent.get("/api/v1/policy").status_code == 401


@pytest.fixture
def finance_desk(world, django_capture_on_commit_callbacks) -> tuple[str, ApiKey]:
    """Dana's address from a message only finance may see, and the agent key, given the
    finance label: the subject and the key's row."""
    subject = dana(world)
    finance = Principal(tenant=world.tenant, name="agent:fin", labels=frozenset({"finance"}))
    invoice = message(world, "Invoices to the finance desk.", visibility=["finance"])
    with django_capture_on_commit_callbacks(execute=True):
        version = propose_address(world, subject, "Finance desk", source=invoice, by=finance)
    assert_active(version)
    row = _key_row(world.keys["agent"])
    ApiKey.objects.filter(pk=row.pk).update(labels=["staff", "finance"])
    row.refresh_from_db()
    return subject, row


def test_labels_taken_from_a_remembered_key_are_the_current_ones(
    private_redis, world, finance_desk, django_capture_on_commit_callbacks
):
    """Past access grants nothing (DESIGN.md, Visibility), remembered keys included: a
    saved change of the key moves its generation, and the next request reloads it."""
    subject, row = finance_desk
    agent = world.client("agent")
    for _ in "12":  # remembered, then taken on trust of its generation
        before = agent.post("/api/v1/resolve", {"subject": subject}, format="json").json()

    row.labels = ["staff"]
    with django_capture_on_commit_callbacks(execute=True):  # as the admin saves it
        row.save(update_fields=["labels"])
    after = agent.post("/api/v1/resolve", {"subject": subject}, format="json").json()

    assert addresses(before) == ["Finance desk"]
    assert addresses(after) == []
    assert len(keys._remembered) == 1


def test_labels_changed_behind_memgov_s_back_apply_once_the_key_is_reloaded(
    private_redis, world, finance_desk
):
    """An UPDATE in SQL moves no generation: the remembered row is used until it is
    reloaded, ``REMEMBER_SECONDS`` after it was read (the bound docs/architecture.md
    names), and then the current labels decide."""
    subject, row = finance_desk
    agent = world.client("agent")
    for _ in "12":
        before = agent.post("/api/v1/resolve", {"subject": subject}, format="json").json()

    ApiKey.objects.filter(pk=row.pk).update(labels=["staff"])
    within = agent.post("/api/v1/resolve", {"subject": subject}, format="json").json()
    _remembered_long_ago()
    after = agent.post("/api/v1/resolve", {"subject": subject}, format="json").json()

    assert addresses(before) == addresses(within) == ["Finance desk"]
    assert addresses(after) == []


def test_person_keys_are_loaded_whole_on_every_request(private_redis, world):
    """A person's is_active and permissions must be current: their keys are not kept."""
    rita = world.client("rita")

    statuses = [rita.get("/api/v1/policy").status_code for _ in range(2)]

    assert statuses == [200, 200]
    assert keys._remembered == {}


@pytest.mark.parametrize("cached", [True, False], ids=["cache-on", "cache-off"])
def test_resolve_counts_each_request_once_whether_answered_on_the_hot_path_or_passed_on(
    private_redis, world, monkeypatch, settings, cached
):
    """On resolve's hot path the rate is counted in the cache's own Redis script (or on
    its own with the cache off); a refused request is passed to DRF's throttle, which
    refuses it in its words, having counted nothing twice."""
    settings.MEMGOV_RESOLVE_CACHE = cached
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "3/min", raising=False)
    subject = dana(world)
    agent = world.client("agent")

    answers = [agent.post("/api/v1/resolve", {"subject": subject}, format="json") for _ in "1234"]

    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert answers[-1]["Content-Type"] == "application/problem+json"
    assert 1 <= int(answers[-1]["Retry-After"]) <= 60
    assert world.client("rita").get("/api/v1/policy").status_code == 200


def test_a_key_revoked_is_refused_on_the_resolve_hot_path_without_a_query(
    private_redis, world, django_capture_on_commit_callbacks, django_assert_num_queries
):
    """The hot path takes a remembered key on trust of its generation, which the cache's
    own Redis script confirms: revoking the key moves it, so the next request is refused."""
    subject = dana(world)
    agent = world.client("agent")
    for _ in "12":  # remembered, and answered from the cache
        assert agent.post("/api/v1/resolve", {"subject": subject}, format="json").status_code == 200
    with django_assert_num_queries(0):
        assert agent.post("/api/v1/resolve", {"subject": subject}, format="json").status_code == 200

    with django_capture_on_commit_callbacks(execute=True):
        tenancy.api_key_revoke(key=_key_row(world.keys["agent"]))
    refused = agent.post("/api/v1/resolve", {"subject": subject}, format="json")

    assert refused.status_code == 401
    assert refused["Content-Type"] == "application/problem+json"
    assert keys._remembered == {}


@pytest.mark.parametrize("asked", ["valid_at", "known_at"])
def test_a_key_revoked_is_refused_on_the_hot_path_for_a_question_about_the_past(
    private_redis, world, django_capture_on_commit_callbacks, asked
):
    """An answer about another instant is never cached, but the key taken on trust is
    still confirmed before it is answered: revoking it refuses the next such question."""
    subject = dana(world)
    agent = world.client("agent")
    past = {"subject": subject, asked: timezone.now().isoformat()}
    for _ in "12":  # remembered, then taken on trust of its generation
        assert agent.post("/api/v1/resolve", past, format="json").status_code == 200

    with django_capture_on_commit_callbacks(execute=True):
        tenancy.api_key_revoke(key=_key_row(world.keys["agent"]))
    refused = agent.post("/api/v1/resolve", past, format="json")

    assert refused.status_code == 401
    assert keys._remembered == {}


def test_a_remembered_key_is_refused_on_the_hot_path_once_it_expires(private_redis, world):
    """Expiry needs no change of the row: the remembered row's own ``expires_at`` decides."""
    subject = dana(world)
    _, raw = tenancy.api_key_create(
        tenant=world.tenant, agent_name="brief", labels=["staff"], expires_in=timedelta(seconds=1)
    )
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    for _ in "12":  # remembered, then taken on trust
        assert agent.post("/api/v1/resolve", {"subject": subject}, format="json").status_code == 200

    time.sleep(1.1)
    refused = agent.post("/api/v1/resolve", {"subject": subject}, format="json")

    assert refused.status_code == 401


def test_a_key_revoked_behind_the_services_back_is_refused_on_the_hot_path_once_reloaded(
    private_redis, world
):
    """An UPDATE in SQL moves no generation; the row is read again ``REMEMBER_SECONDS``
    after it was loaded, and from then on the key is refused."""
    subject = dana(world)
    agent = world.client("agent")
    for _ in "12":
        assert agent.post("/api/v1/resolve", {"subject": subject}, format="json").status_code == 200

    ApiKey.objects.filter(pk=_key_row(world.keys["agent"]).pk).update(revoked_at=timezone.now())
    _remembered_long_ago()
    refused = agent.post("/api/v1/resolve", {"subject": subject}, format="json")

    assert refused.status_code == 401


def test_a_key_taken_on_trust_is_read_from_the_database_while_redis_is_unreachable(
    private_redis, world, settings, django_capture_on_commit_callbacks
):
    """Without Redis nothing can confirm the remembered key: the request is answered by the
    full path, which reads the key's row, so a revocation still applies."""
    subject = dana(world)
    agent = world.client("agent")
    for _ in "12":
        assert agent.post("/api/v1/resolve", {"subject": subject}, format="json").status_code == 200
    settings.CACHES = {
        "default": {**settings.CACHES["default"], "LOCATION": f"redis://127.0.0.1:{free_port()}/1"}
    }

    answered = agent.post("/api/v1/resolve", {"subject": subject}, format="json")
    ApiKey.objects.filter(pk=_key_row(world.keys["agent"]).pk).update(revoked_at=timezone.now())
    refused = agent.post("/api/v1/resolve", {"subject": subject}, format="json")

    assert answered.status_code == 200
    assert refused.status_code == 401


def test_with_the_cache_off_a_resolve_is_counted_while_its_statement_runs(
    private_redis, world, settings, monkeypatch
):
    """The rate script is sent before the candidate statement and read after it
    (``cache.admitting``): a refused subject still drains the reply, a Redis restarted
    since (its scripts gone) is answered by loading the script again."""
    settings.MEMGOV_RESOLVE_CACHE = False
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "4/min", raising=False)
    subject = dana(world)
    agent = world.client("agent")

    first = agent.post("/api/v1/resolve", {"subject": subject}, format="json")
    missing = agent.post("/api/v1/resolve", {"subject": "ent_nobody"}, format="json")
    private_redis.client().script_flush()
    after_flush = agent.post("/api/v1/resolve", {"subject": subject}, format="json")
    last = agent.post("/api/v1/resolve", {"subject": subject}, format="json")
    over = agent.post("/api/v1/resolve", {"subject": subject}, format="json")

    assert [r.status_code for r in (first, missing, after_flush, last, over)] == [
        200,
        404,
        200,
        200,
        429,
    ]


def test_with_the_cache_off_resolve_is_served_while_redis_is_unreachable(
    private_redis, world, settings, monkeypatch
):
    settings.MEMGOV_RESOLVE_CACHE = False
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "1/min", raising=False)
    settings.CACHES = {
        "default": {**settings.CACHES["default"], "LOCATION": f"redis://127.0.0.1:{free_port()}/1"}
    }
    subject = dana(world)
    agent = world.client("agent")

    statuses = [
        agent.post("/api/v1/resolve", {"subject": subject}, format="json").status_code
        for _ in range(3)
    ]

    assert statuses == [200, 200, 200]
    assert cache.stats["throttle_failures"] == 1


def test_a_script_run_while_the_rate_script_is_in_flight_gets_its_own_reply(private_redis):
    """``cache.admitting`` holds the thread's kept connection until it reads its verdict:
    a script run inside the block takes a pool connection, and each reads its own reply."""
    window = ratelimit.Window(bucket="mg:thr:test", limit=1, period=60, now=time.time())
    names = cache.generation_keys(1, "ent_inner")

    with cache.admitting(window):
        key, entry, held = cache.run_script("read", cache._READ, names, [7, 7, "mg:res:1:x:", "d"])
    with pytest.raises(ratelimit.RateExceeded), cache.admitting(window):
        pass

    assert key.decode().endswith(":7:7:d") and entry is None and held == 0
