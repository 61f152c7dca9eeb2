"""The per-key throttle in the cache's Redis, and API keys read on every request: refused
on the first request after their revocation, however it was made."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import tenancy
from agent_interface.auth import PrincipalRateThrottle
from core import redis_client
from core.models import ApiKey
from core.principals import Principal
from tests.cache.builders import addresses, assert_active, dana, message, propose_address
from tests.cache.conftest import free_port
from tests.conftest import needs

pytestmark = [needs("redis")]


def _key_row(raw: str) -> ApiKey:
    return ApiKey.objects.get(prefix=raw.split("_")[1])


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
    assert redis_client.stats["throttle_failures"] == 1  # then a cooldown: Redis is not asked again


def test_an_agent_key_costs_one_query_and_is_refused_once_revoked(
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


def test_a_key_revoked_behind_the_services_back_is_refused_on_its_next_request(
    private_redis, world
):
    agent = world.client("agent")
    assert agent.get("/api/v1/policy").status_code == 200

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


def test_labels_saved_on_a_key_apply_to_its_next_request(
    private_redis, world, finance_desk, django_capture_on_commit_callbacks
):
    """Past access grants nothing (docs/design.md, Visibility): the next request reads the
    key's current labels, and its cached answer is looked up under them."""
    subject, row = finance_desk
    agent = world.client("agent")
    for _ in "12":  # computed, then answered from the cache
        before = agent.post("/api/v1/resolve", {"subject": subject}, format="json").json()

    row.labels = ["staff"]
    with django_capture_on_commit_callbacks(execute=True):  # as the admin saves it
        row.save(update_fields=["labels"])
    after = agent.post("/api/v1/resolve", {"subject": subject}, format="json").json()

    assert addresses(before) == ["Finance desk"]
    assert addresses(after) == []


def test_labels_changed_behind_memgov_s_back_apply_to_the_next_request(
    private_redis, world, finance_desk
):
    """An UPDATE in SQL, which no signal sees, applies as soon as one made by a service."""
    subject, row = finance_desk
    agent = world.client("agent")
    for _ in "12":
        before = agent.post("/api/v1/resolve", {"subject": subject}, format="json").json()

    ApiKey.objects.filter(pk=row.pk).update(labels=["staff"])
    after = agent.post("/api/v1/resolve", {"subject": subject}, format="json").json()

    assert addresses(before) == ["Finance desk"]
    assert addresses(after) == []


def test_person_keys_are_loaded_whole_on_every_request(private_redis, world):
    """A person's is_active and permissions must be current."""
    rita = world.client("rita")

    statuses = [rita.get("/api/v1/policy").status_code for _ in range(2)]

    assert statuses == [200, 200]


@pytest.mark.parametrize("cached", [True, False], ids=["cache-on", "cache-off"])
def test_resolve_counts_each_request_once_whether_answered_on_the_hot_path_or_passed_on(
    private_redis, world, monkeypatch, settings, cached
):
    """Resolve is counted by the same throttle as every other view, once per request, with
    the cache on or off; a refused request counts nothing."""
    settings.MEMGOV_RESOLVE_CACHE = cached
    monkeypatch.setattr(PrincipalRateThrottle, "rate", "3/min", raising=False)
    subject = dana(world)
    agent = world.client("agent")

    answers = [agent.post("/api/v1/resolve", {"subject": subject}, format="json") for _ in "1234"]

    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert answers[-1]["Content-Type"] == "application/problem+json"
    assert 1 <= int(answers[-1]["Retry-After"]) <= 60
    assert world.client("rita").get("/api/v1/policy").status_code == 200


def test_a_key_revoked_is_refused_on_its_next_resolve(
    private_redis, world, django_capture_on_commit_callbacks, django_assert_num_queries
):
    """A cached answer costs one query, the key's: revoking the key refuses the next one."""
    subject = dana(world)
    agent = world.client("agent")
    for _ in "12":  # computed, then answered from the cache
        assert agent.post("/api/v1/resolve", {"subject": subject}, format="json").status_code == 200
    with django_assert_num_queries(1):
        assert agent.post("/api/v1/resolve", {"subject": subject}, format="json").status_code == 200

    with django_capture_on_commit_callbacks(execute=True):
        tenancy.api_key_revoke(key=_key_row(world.keys["agent"]))
    refused = agent.post("/api/v1/resolve", {"subject": subject}, format="json")

    assert refused.status_code == 401
    assert refused["Content-Type"] == "application/problem+json"


@pytest.mark.parametrize("asked", ["valid_at", "known_at"])
def test_a_key_revoked_is_refused_for_a_question_about_the_past(
    private_redis, world, django_capture_on_commit_callbacks, asked
):
    """An answer about another instant is never cached; revoking the key refuses the next
    such question all the same."""
    subject = dana(world)
    agent = world.client("agent")
    past = {"subject": subject, asked: timezone.now().isoformat()}
    for _ in "12":
        assert agent.post("/api/v1/resolve", past, format="json").status_code == 200

    with django_capture_on_commit_callbacks(execute=True):
        tenancy.api_key_revoke(key=_key_row(world.keys["agent"]))
    refused = agent.post("/api/v1/resolve", past, format="json")

    assert refused.status_code == 401


def test_a_key_is_refused_on_resolve_once_it_expires(private_redis, world):
    """Expiry needs no change of the row: its ``expires_at`` decides."""
    subject = dana(world)
    _, raw = tenancy.api_key_create(
        tenant=world.tenant, agent_name="brief", labels=["staff"], expires_in=timedelta(seconds=1)
    )
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    for _ in "12":
        assert agent.post("/api/v1/resolve", {"subject": subject}, format="json").status_code == 200

    time.sleep(1.1)
    refused = agent.post("/api/v1/resolve", {"subject": subject}, format="json")

    assert refused.status_code == 401


def test_a_key_revoked_behind_the_services_back_is_refused_on_its_next_resolve(
    private_redis, world
):
    """An UPDATE in SQL, which no signal sees: the next resolve reads the row."""
    subject = dana(world)
    agent = world.client("agent")
    for _ in "12":
        assert agent.post("/api/v1/resolve", {"subject": subject}, format="json").status_code == 200

    ApiKey.objects.filter(pk=_key_row(world.keys["agent"]).pk).update(revoked_at=timezone.now())
    refused = agent.post("/api/v1/resolve", {"subject": subject}, format="json")

    assert refused.status_code == 401


def test_a_key_revoked_while_redis_is_unreachable_is_refused(
    private_redis, world, settings, django_capture_on_commit_callbacks
):
    """The key is read from the database whether or not Redis answers."""
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


def test_with_the_cache_off_every_resolve_is_counted(private_redis, world, settings, monkeypatch):
    """A refused subject is counted too, and a Redis whose scripts are gone (restarted or
    flushed) is answered by loading the script again."""
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
    assert redis_client.stats["throttle_failures"] == 1
