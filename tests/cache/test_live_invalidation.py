"""Invalidation under real concurrency: gunicorn with 2 workers, readers in several
threads resolving over HTTP without pause, and a change made by another client. Once the
change has returned, no read may return what it ended (docs/api.md: "When it returns, no
resolve returns the item")."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from approvals.checking import gate
from memory.models import MemoryVersion, Status
from tests.cache.builders import addresses, assert_active, dana, message, propose_address
from tests.cache.conftest import Gunicorn, Readers, wait_until
from tests.conftest import needs
from tests.outages import DelayingProxy

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]

ELM = "12 Elm Street"


def says_elm(read: Any) -> bool:
    return ELM in addresses(read.answer)


def elm_counts(readers: Readers, until: float, since: float) -> tuple[int, int, int, int]:
    """Reads that ended before ``until`` and how many said Elm Street; reads that started
    after ``since`` and how many said Elm Street."""
    before = [r for r in readers.reads if r.ended < until]
    after = readers.started_after(since)
    return len(before), sum(map(says_elm, before)), len(after), sum(map(says_elm, after))


def test_after_a_retirement_returns_no_reader_gets_the_retired_address(
    private_redis, gunicorn_server, world
):
    subject = dana(world)
    version = propose_address(world, subject)
    assert_active(version)

    with Readers(gunicorn_server, world.keys["agent"], {"subject": subject}) as readers:
        readers.wait_for(20)
        assert private_redis.entries(subject), "the readers are not using the cache"
        asked = time.monotonic()
        status, _ = gunicorn_server.call(
            "POST",
            f"/api/v1/memories/{version.item_id}/retire",
            world.keys["rita"],
            {"reason": "Dana moved"},
        )
        returned = time.monotonic()
        readers.wait_for(40, after=returned)

    assert status == 200
    assert {r.status for r in readers.reads} == {200}
    before, before_elm, after, after_elm = elm_counts(readers, until=asked, since=returned)
    assert before == before_elm >= 20
    assert after >= 40
    assert after_elm == 0


def test_after_a_source_revocation_returns_no_reader_gets_what_it_said(
    private_redis, gunicorn_server, world
):
    subject = dana(world)
    said = message(world, "Deliver to 12 Elm Street.")
    version = propose_address(world, subject, source=said)
    assert_active(version)

    with Readers(gunicorn_server, world.keys["agent"], {"subject": subject}) as readers:
        readers.wait_for(20)
        assert private_redis.entries(subject), "the readers are not using the cache"
        asked = time.monotonic()
        status, body = gunicorn_server.call(
            "POST",
            f"/api/v1/sources/{said}/revoke",
            world.keys["rita"],
            {"reason": "the message was about another customer"},
        )
        returned = time.monotonic()
        readers.wait_for(40, after=returned)

    assert status == 200, body
    assert {r.status for r in readers.reads} == {200}
    before, before_elm, after, after_elm = elm_counts(readers, until=asked, since=returned)
    assert before == before_elm >= 20
    assert after >= 40
    assert after_elm == 0


def test_after_a_correction_is_activated_no_reader_gets_the_old_address(
    private_redis, gunicorn_server, world
):
    """While the correction waits, answers keep the old address and say
    ``pending_correction``; once its activation returns, only the new address is read."""
    subject = dana(world)
    version = propose_address(world, subject)
    assert_active(version)

    with Readers(gunicorn_server, world.keys["agent"], {"subject": subject}) as readers:
        readers.wait_for(20)
        status, corrected = gunicorn_server.call(
            "POST",
            f"/api/v1/memories/{version.item_id}/versions",
            world.keys["agent"],
            {"value": "4 Dock Road", "statement": "Dana wants deliveries at the office."},
            **{"If-Match": '"1"'},
        )
        correction_returned = time.monotonic()
        readers.wait_for(20, after=correction_returned)
        assert corrected["status"] == Status.CHECKING  # no worker runs it: we do, below
        activating = time.monotonic()
        assert gate(MemoryVersion.objects.get(item_id=version.item_id, number=2).pk) == "active"
        activated = time.monotonic()
        readers.wait_for(40, after=activated)

    assert status == 201
    waiting = [r for r in readers.started_after(correction_returned) if r.ended < activating]
    after = readers.started_after(activated)
    assert {r.status for r in readers.reads} == {200}
    assert len(waiting) >= 20
    pending = [(f["value"], f["pending_correction"]) for r in waiting for f in r.answer["facts"]]
    assert set(pending) == {(ELM, True)}
    assert len(after) >= 40
    assert sum(says_elm(r) for r in after) == 0
    assert {tuple(addresses(r.answer)) for r in after} == {("4 Dock Road",)}


def test_a_reader_delayed_before_its_cache_write_cannot_resurrect_a_retired_address(
    private_redis, gunicorn_server, redis_server, world
):
    """The slow reader reads the generation, then the database (Elm Street is active),
    then sleeps; the retirement commits and bumps the generation; the slow reader then
    writes its answer under the old generation, where no one looks again."""
    subject = dana(world)
    version = propose_address(world, subject)
    assert_active(version)
    body = {"subject": subject, "context": {"task": "slow"}}
    # Its cache writes (SET) reach Redis three seconds late, and it waits for them: the
    # window between its database read and its write, in which the retirement commits.
    proxy = DelayingProxy(redis_server.port, lambda sent: b"\r\nSET\r\n" in sent, 3.0)
    slow = Gunicorn(
        f"redis://127.0.0.1:{proxy.port}", workers=1, MEMGOV_CACHE_SOCKET_TIMEOUT_SECONDS="10"
    )
    try:
        # A first request (about another time: never cached, so never delayed) warms it up.
        warm_up = {"subject": subject, "valid_at": timezone.now().isoformat()}
        assert slow.resolve(world.keys["agent"], warm_up)[0] == 200
        generation = private_redis.client().get(f"mg:gen:{world.tenant.pk}:{subject}")
        slow_read: dict[str, Any] = {}

        def read_slowly() -> None:
            slow_read["answer"] = slow.resolve(world.keys["agent"], body)
            slow_read["ended"] = time.monotonic()

        reader = threading.Thread(target=read_slowly)
        reader.start()
        time.sleep(1)  # it has read the generation and the database, and now sleeps
        status, _ = gunicorn_server.call(
            "POST",
            f"/api/v1/memories/{version.item_id}/retire",
            world.keys["rita"],
            {"reason": "Dana moved"},
        )
        retired = time.monotonic()
        reader.join(timeout=60)
    finally:
        slow.stop()
        proxy.close()
    fresh = [gunicorn_server.resolve(world.keys["agent"], body) for _ in range(5)]

    assert status == 200
    assert slow_read["answer"][0] == 200
    assert addresses(slow_read["answer"][1]) == [ELM]  # it read before the retirement
    assert slow_read["ended"] > retired  # and wrote after it
    generation_text = generation.decode()
    written = [k for k in private_redis.entries(subject) if f":{generation_text}:" in k.decode()]
    assert len(written) == 1  # its stale answer is in Redis ...
    assert [addresses(answer) for _, answer in fresh] == [[]] * 5  # ... and never read


def test_resolve_answers_from_the_database_while_redis_is_down_and_nothing_stale_after(
    private_redis, gunicorn_server, redis_server, world
):
    """Redis stops mid-run: answers stay correct (from PostgreSQL), and a retirement is
    refused with nothing changed (it could not end the cached answers: fail-closed); Redis
    comes back empty: the retirement goes through and no answer from before is served."""
    subject = dana(world)
    version = propose_address(world, subject)
    assert_active(version)
    retire = f"/api/v1/memories/{version.item_id}/retire"

    with Readers(gunicorn_server, world.keys["agent"], {"subject": subject}) as readers:
        readers.wait_for(20)
        assert private_redis.entries(subject), "the readers are not using the cache"
        redis_server.stop()
        stopped = time.monotonic()
        readers.wait_for(20, after=stopped)
        refused, problem = gunicorn_server.call(
            "POST", retire, world.keys["rita"], {"reason": "Dana moved"}
        )
        status_after_refusal = MemoryVersion.objects.get(pk=version.pk).status
        redis_server.start()
        restarted = time.monotonic()
        readers.wait_for(20, after=restarted)
        wait_until(lambda: bool(redis_server.entries(subject)), what="the cache to fill again")
        status, _ = gunicorn_server.call(
            "POST", retire, world.keys["rita"], {"reason": "Dana moved"}
        )
        retired = time.monotonic()
        readers.wait_for(40, after=retired)

    assert refused == 503, problem
    assert problem["type"].endswith("/cache-unavailable")
    assert status_after_refusal == Status.ACTIVE
    assert status == 200
    assert {r.status for r in readers.reads} == {200}
    while_down = [r for r in readers.started_after(stopped) if r.ended < restarted]
    assert len(while_down) == sum(map(says_elm, while_down)) >= 20  # from PostgreSQL
    _, _, after_retirement, stale = elm_counts(readers, until=0, since=retired)
    assert after_retirement >= 40
    assert stale == 0


def test_a_cached_address_stops_being_served_when_it_expires(private_redis, gunicorn_server, world):
    subject = dana(world)
    expires_at = timezone.now() + timedelta(seconds=3)
    version = propose_address(world, subject, expires_at=expires_at)
    assert_active(version)
    assert timezone.now() < expires_at, "activation took longer than the item's life"
    boundary = time.monotonic() + (expires_at - timezone.now()).total_seconds()

    with Readers(gunicorn_server, world.keys["agent"], {"subject": subject}) as readers:
        readers.wait_for(20)
        (key,) = private_redis.entries(subject)
        assert private_redis.client().pexpiretime(key) <= expires_at.timestamp() * 1000
        readers.wait_for(40, after=boundary)

    assert {r.status for r in readers.reads} == {200}
    before, before_elm, after, after_elm = elm_counts(readers, until=boundary, since=boundary)
    assert before == before_elm >= 20
    assert after >= 40
    assert after_elm == 0
