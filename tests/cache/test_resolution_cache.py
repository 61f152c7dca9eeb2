"""The resolution cache in one process, against a real Redis: what is cached, under which
key, and every change that must make a cached answer unreadable (docs/design.md, Cache)."""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from approvals.services import memory_retire, source_visibility_change, version_reject
from core import redis_client
from core.errors import CacheUnavailable
from core.principals import Principal
from memory import generations, policy, proposals
from memory.models import MemoryItem, MemoryVersion, Source, Status
from memory.resolution import resolve_for
from tests.cache.builders import (
    addresses,
    approve,
    assert_active,
    dana,
    message,
    now_request,
    propose_address,
    propose_office_delivery,
)
from tests.cache.conftest import free_port
from tests.conftest import later, needs

pytestmark = [needs("redis")]

ORDER_A = {"task": "order-a"}


def test_a_repeated_resolve_is_answered_from_redis_without_sql(
    private_redis, world, django_capture_on_commit_callbacks, django_assert_num_queries
):
    subject = dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        version = propose_address(world, subject)
    assert_active(version)
    agent = world.client("agent")
    first = agent.post("/api/v1/resolve", {"subject": subject}, format="json")

    # One statement, the caller's key (read on every request): no policy, no candidates.
    with django_assert_num_queries(1):
        second = agent.post("/api/v1/resolve", {"subject": subject}, format="json")

    assert second.status_code == 200
    assert addresses(second.json()) == addresses(first.json()) == ["12 Elm Street"]
    assert second.json()["policy_version"] == "1"
    assert (redis_client.stats["misses"], redis_client.stats["hits"]) == (1, 1)
    assert len(private_redis.entries(subject)) == 1


def test_an_answer_from_the_cache_is_sent_as_stored_and_says_what_the_fresh_one_said(
    private_redis, world, django_capture_on_commit_callbacks
):
    """The stored JSON goes out as it is (agent_interface.renderers), with this request's
    instants; an idempotent retry of it replays the same answer."""
    subject = dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        version = propose_address(world, subject)
    assert_active(version)
    agent = world.client("agent")
    fresh = agent.post("/api/v1/resolve", {"subject": subject}, format="json")

    cached = agent.post(
        "/api/v1/resolve", {"subject": subject}, format="json", HTTP_IDEMPOTENCY_KEY="once"
    )
    replay = agent.post(
        "/api/v1/resolve", {"subject": subject}, format="json", HTTP_IDEMPOTENCY_KEY="once"
    )

    assert redis_client.stats["hits"] == 1
    assert cached["Content-Type"] == "application/json"
    instants = ("valid_at", "known_at")
    body = {k: v for k, v in cached.json().items() if k not in instants}
    assert body == {k: v for k, v in fresh.json().items() if k not in instants}
    assert list(cached.json())[:2] == list(instants)
    assert replay["Idempotent-Replayed"] == "true"
    assert replay.json() == cached.json()


def test_a_value_beyond_64_bits_is_answered_exactly_and_left_uncached(
    private_redis, world, django_capture_on_commit_callbacks
):
    # The cache stores answers with orjson, which would read such an integer back as a
    # float: the second answer must still carry every digit.
    subject = dana(world)
    huge = 2**70 + 1
    with django_capture_on_commit_callbacks(execute=True):
        version = propose_address(world, subject, value=huge)  # type: ignore[arg-type]
    assert_active(version)
    agent = world.client("agent")

    answers = [agent.post("/api/v1/resolve", {"subject": subject}, format="json") for _ in "12"]

    assert [json.loads(a.content)["facts"][0]["value"] for a in answers] == [huge, huge]
    assert redis_client.stats["uncacheable"] == 2 and redis_client.stats["hits"] == 0
    assert private_redis.entries(subject) == []


def test_retiring_dana_s_address_removes_it_from_the_next_answer(
    private_redis, world, django_capture_on_commit_callbacks
):
    subject = dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        version = propose_address(world, subject)
    agent = world.principal("agent")
    assert addresses(resolve_for(agent, now_request(subject))) == ["12 Elm Street"]

    with django_capture_on_commit_callbacks(execute=True):
        memory_retire(
            principal=world.principal("rita"),
            item=MemoryItem.objects.get(pk=version.item_id),
            reason="Dana moved",
        )

    assert addresses(resolve_for(agent, now_request(subject))) == []
    assert redis_client.stats["hits"] == 0


def test_a_pending_correction_shows_in_answers_cached_before_it_and_goes_when_rejected(
    private_redis, world, django_capture_on_commit_callbacks
):
    subject = dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        office = propose_office_delivery(world, subject, expires_at=later(14))
        approve(world, office)
    assert_active(office)
    agent = world.principal("agent")
    before = resolve_for(agent, now_request(subject, context=ORDER_A))
    assert [f["pending_correction"] for f in before["facts"]] == [False]
    item = MemoryItem.objects.get(pk=office.item_id)

    with django_capture_on_commit_callbacks(execute=True):
        proposals.memory_correct(
            principal=agent, item=item, if_match='"1"', data={"value": "9 Quay Street"}
        )
    pending = resolve_for(agent, now_request(subject, context=ORDER_A))
    with django_capture_on_commit_callbacks(execute=True):
        version_reject(principal=world.principal("rita"), item=item, reason="ORD-A says Dock Road")
    after = resolve_for(agent, now_request(subject, context=ORDER_A))

    assert [(f["value"], f["pending_correction"]) for f in pending["facts"]] == [
        ("4 Dock Road", True)
    ]
    assert [(f["value"], f["pending_correction"]) for f in after["facts"]] == [
        ("4 Dock Road", False)
    ]


def test_publishing_a_policy_changes_the_policy_version_of_the_next_answer(
    private_redis, world, django_capture_on_commit_callbacks
):
    subject = dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        propose_address(world, subject)
    agent = world.principal("agent")
    assert resolve_for(agent, now_request(subject))["policy_version"] == "1"

    with django_capture_on_commit_callbacks(execute=True):
        policy.policy_publish(
            principal=world.principal("rita"),
            precedence={"order": ["kind", "specificity", "verification", "valid_from"]},
            reason="kinds first",
        )

    assert resolve_for(agent, now_request(subject))["policy_version"] == "2"


def test_an_answer_cached_for_finance_is_not_served_to_staff(
    private_redis, world, django_capture_on_commit_callbacks
):
    subject = dana(world)
    finance = Principal(tenant=world.tenant, name="agent:fin", labels=frozenset({"finance"}))
    staff = world.principal("agent")
    invoice = message(world, "Invoices to the finance desk.", visibility=["finance"])
    with django_capture_on_commit_callbacks(execute=True):
        version = propose_address(world, subject, "Finance desk", source=invoice, by=finance)
    assert_active(version)
    assert addresses(resolve_for(finance, now_request(subject))) == ["Finance desk"]
    assert addresses(resolve_for(finance, now_request(subject))) == ["Finance desk"]

    answer = resolve_for(staff, now_request(subject))

    assert addresses(answer) == []
    assert (redis_client.stats["misses"], redis_client.stats["hits"]) == (2, 1)


def test_answers_about_another_time_are_never_cached(
    private_redis, world, django_capture_on_commit_callbacks
):
    subject = dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        propose_address(world, subject)
    agent = world.principal("agent")
    moment = timezone.now() + timedelta(seconds=1)

    answers = [resolve_for(agent, now_request(subject, valid_at=moment)) for _ in range(2)]
    answers += [resolve_for(agent, now_request(subject, known_at=moment)) for _ in range(2)]

    assert [addresses(a) for a in answers] == [["12 Elm Street"]] * 4
    assert private_redis.entries(subject) == []
    assert redis_client.stats["hits"] + redis_client.stats["misses"] == 0


def test_an_entry_lives_no_longer_than_the_first_expiry_in_it(
    private_redis, world, django_capture_on_commit_callbacks
):
    subject = dana(world)
    expires_at = timezone.now() + timedelta(seconds=30)
    with django_capture_on_commit_callbacks(execute=True):
        version = propose_address(world, subject, expires_at=expires_at)
    assert_active(version)
    resolve_for(world.principal("agent"), now_request(subject))

    (key,) = private_redis.entries(subject)
    entry_ends_ms = private_redis.client().pexpiretime(key)

    assert timezone.now().timestamp() * 1000 < entry_ends_ms <= expires_at.timestamp() * 1000
    assert generations.MAX_ENTRY_SECONDS * 1000 > 30_000


def test_an_entry_written_before_redis_was_emptied_is_never_read(
    private_redis, world, django_capture_on_commit_callbacks
):
    """A slow reader read the generation, then Redis was emptied, then it wrote: the
    generation starts again from a random value, so its key is never asked for."""
    subject = dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        propose_address(world, subject)
    agent = world.principal("agent")
    private_redis.client().flushdb()  # so the reader below creates the generations afresh
    resolve_for(agent, now_request(subject))
    (key,) = private_redis.entries(subject)
    private_redis.client().flushdb()
    stale = {"policy_version": "1", "facts": [{"field": "delivery_address", "value": "old"}]}
    private_redis.client().set(key, json.dumps(stale))

    answer = resolve_for(agent, now_request(subject))

    assert addresses(answer) == ["12 Elm Street"]
    assert redis_client.stats["hits"] == 0


def _point_cache_at(settings, url: str) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": url,
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.5, "SOCKET_TIMEOUT": 0.5},
        }
    }


def test_with_redis_unreachable_resolve_answers_from_the_database_and_warns_once(
    private_redis, world, settings, caplog, django_capture_on_commit_callbacks
):
    subject = dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        propose_address(world, subject)
    _point_cache_at(settings, f"redis://127.0.0.1:{free_port()}/1")
    agent = world.principal("agent")

    with caplog.at_level(logging.WARNING, logger="core.redis_client"):
        answers = [resolve_for(agent, now_request(subject)) for _ in range(3)]

    assert [addresses(a) for a in answers] == [["12 Elm Street"]] * 3
    assert redis_client.stats["read_failures"] == 1
    assert redis_client.stats["bypassed"] == 2
    assert [r.getMessage() for r in caplog.records if r.name == "core.redis_client"] == [
        "Redis read failed (1 so far in this process); going on without it"
    ]


def test_a_retirement_while_redis_is_unreachable_is_refused_and_changes_nothing(
    private_redis, world, settings, django_capture_on_commit_callbacks
):
    """Fail-closed (memory.generations): a change that cannot end the answers cached before it
    is not made; once Redis answers again, the same retirement ends them at once."""
    subject = dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        version = propose_address(world, subject)
    agent, rita = world.principal("agent"), world.principal("rita")
    assert addresses(resolve_for(agent, now_request(subject))) == ["12 Elm Street"]
    live = settings.CACHES["default"]["LOCATION"]
    _point_cache_at(settings, f"redis://127.0.0.1:{free_port()}/1")
    item = MemoryItem.objects.get(pk=version.item_id)

    with pytest.raises(CacheUnavailable), django_capture_on_commit_callbacks(execute=True):
        memory_retire(principal=rita, item=item, reason="Dana moved")
    unchanged = MemoryVersion.objects.get(pk=version.pk).status
    _point_cache_at(settings, live)  # the same server, its entries still there
    settings.MEMGOV_REDIS_COOLDOWN_SECONDS = 0  # the cooldown is over
    still = resolve_for(agent, now_request(subject))
    with django_capture_on_commit_callbacks(execute=True):
        memory_retire(principal=rita, item=item, reason="Dana moved")
    after = resolve_for(agent, now_request(subject))

    assert redis_client.stats["hold_failures"] == 1
    assert unchanged == Status.ACTIVE
    assert addresses(still) == ["12 Elm Street"]
    assert redis_client.stats["hits"] == 1  # the refused change left the cached answer standing
    assert addresses(after) == []


def test_a_change_whose_process_died_before_its_release_leaves_nothing_stale(
    private_redis, world, django_capture_on_commit_callbacks
):
    """Committed, then the process died before releasing its hold: the generations had
    moved on before the commit and stay held, so the answer is computed from the database
    and not stored, until the hold ends by itself; then caching resumes."""
    subject = dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        version = propose_address(world, subject)
    agent = world.principal("agent")
    assert addresses(resolve_for(agent, now_request(subject))) == ["12 Elm Street"]

    # Committed, and nothing after the commit runs: the callbacks are never executed.
    with django_capture_on_commit_callbacks(execute=False):
        memory_retire(
            principal=world.principal("rita"),
            item=MemoryItem.objects.get(pk=version.item_id),
            reason="Dana moved",
        )
    held = [resolve_for(agent, now_request(subject)) for _ in "12"]
    client = private_redis.client()
    for hold in client.scan_iter("mg:gen:*:hold"):  # HOLD_SECONDS later
        client.zadd(hold, dict.fromkeys(client.zrange(hold, 0, -1), 0))
    after = [resolve_for(agent, now_request(subject)) for _ in "12"]

    assert [addresses(answer) for answer in held + after] == [[]] * 4
    assert redis_client.stats["held"] == 2
    assert (redis_client.stats["misses"], redis_client.stats["hits"]) == (4, 1)


def test_labels_narrowed_on_a_source_end_a_cached_answer_for_staff(
    private_redis, world, django_capture_on_commit_callbacks
):
    subject = dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        version = propose_address(world, subject)
    staff = world.principal("agent")
    finance = Principal(tenant=world.tenant, name="agent:fin", labels=frozenset({"finance"}))
    assert addresses(resolve_for(staff, now_request(subject))) == ["12 Elm Street"]
    assert addresses(resolve_for(staff, now_request(subject))) == ["12 Elm Street"]
    assert redis_client.stats["hits"] == 1  # the answer is in Redis

    with django_capture_on_commit_callbacks(execute=True):
        source_visibility_change(
            principal=world.principal("rita"),
            source=Source.objects.get(pk=version.source_ids[0]),
            visibility=["finance"],
            reason="the message moved to the finance mailbox",
        )

    assert addresses(resolve_for(staff, now_request(subject))) == []
    assert addresses(resolve_for(finance, now_request(subject))) == ["12 Elm Street"]
    assert redis_client.stats["hits"] == 1  # both answered from the database after the bump


def test_a_redis_restart_between_two_resolves_is_met_with_a_new_connection_not_a_cooldown(
    private_redis, redis_server, world, django_capture_on_commit_callbacks
):
    """A pooled connection the server closed since it last answered is replaced at once
    (``redis_client.redis_client``'s retry), and the scripts the restart lost are loaded again."""
    subject = dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        propose_address(world, subject)
    agent = world.principal("agent")
    assert addresses(resolve_for(agent, now_request(subject))) == ["12 Elm Street"]

    redis_server.stop()
    redis_server.start()  # empty, its scripts gone
    answers = [resolve_for(agent, now_request(subject)) for _ in range(2)]

    assert [addresses(a) for a in answers] == [["12 Elm Street"]] * 2
    assert redis_client.stats["read_failures"] == 0
    assert (redis_client.stats["misses"], redis_client.stats["hits"]) == (2, 1)


def test_a_redis_that_stops_answering_times_out_and_its_late_reply_is_never_read(
    private_redis, redis_server, world, settings, django_capture_on_commit_callbacks
):
    """A server that stops answering mid-call is given up after the configured 0.5 s (a
    timeout is not retried), the resolve is answered from the database, and the reply
    that arrives once the server goes on is never read as another subject's answer."""
    dana_id, lee_id = dana(world), dana(world)
    with django_capture_on_commit_callbacks(execute=True):
        propose_address(world, dana_id)
        propose_address(world, lee_id, "7 Oak Lane")
    agent = world.principal("agent")
    assert addresses(resolve_for(agent, now_request(lee_id))) == ["7 Oak Lane"]  # cached
    server = redis_server.process
    assert server is not None
    server.send_signal(signal.SIGSTOP)
    going_on = threading.Timer(2.5, server.send_signal, [signal.SIGCONT])  # never a hang
    going_on.start()
    try:
        started = time.monotonic()
        answer = resolve_for(agent, now_request(dana_id))
        waited = time.monotonic() - started
    finally:
        going_on.cancel()
        server.send_signal(signal.SIGCONT)

    assert 0.4 < waited < 2
    assert addresses(answer) == ["12 Elm Street"]  # from the database
    assert redis_client.stats["read_failures"] == 1
    settings.MEMGOV_REDIS_COOLDOWN_SECONDS = 0  # the cooldown is over
    assert addresses(resolve_for(agent, now_request(lee_id))) == ["7 Oak Lane"]
    assert redis_client.stats["hits"] == 1
