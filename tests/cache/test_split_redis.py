"""Issue 11, point 7: fail-closed invalidation. A healthy node that had an answer cached
must never serve it after a change that ended it has returned. A retirement asked of a
web node whose Redis is unreachable could not end the cached answers, so it is refused
(503, nothing changed: memory.generations holds the generations before a change commits); the
same retirement through a healthy node ends them at once."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from memory.models import MemoryVersion, Status
from tests.cache.builders import addresses, assert_active, dana, propose_address
from tests.cache.conftest import Gunicorn, Readers, free_port
from tests.conftest import needs

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]

ELM = "12 Elm Street"


@pytest.fixture
def node_without_redis(django_db_setup: object) -> Iterator[Gunicorn]:
    """A second web process whose REDIS_URL points at a port where nothing listens."""
    server = Gunicorn(f"redis://127.0.0.1:{free_port()}", workers=1)
    yield server
    server.stop()


def test_a_retirement_through_a_node_without_redis_is_refused_and_through_another_ends_it(
    private_redis, gunicorn_server, node_without_redis, world
):
    subject = dana(world)
    version = propose_address(world, subject)
    assert_active(version)
    retire = f"/api/v1/memories/{version.item_id}/retire"

    with Readers(gunicorn_server, world.keys["agent"], {"subject": subject}) as readers:
        readers.wait_for(20)
        assert private_redis.entries(subject), "the healthy node is not using the cache"
        refused, problem = node_without_redis.call(
            "POST", retire, world.keys["rita"], {"reason": "Dana moved"}
        )
        asked = time.monotonic()
        readers.wait_for(20, after=asked)
        status_after_refusal = MemoryVersion.objects.get(pk=version.pk).status
        retiring = time.monotonic()
        status, body = gunicorn_server.call(
            "POST", retire, world.keys["rita"], {"reason": "Dana moved"}
        )
        returned = time.monotonic()
        readers.wait_for(40, after=returned)

    assert refused == 503, problem
    assert problem["type"].endswith("/cache-unavailable")
    assert status_after_refusal == Status.ACTIVE
    assert status == 200, body
    assert {r.status for r in readers.reads} == {200}
    between = [r for r in readers.started_after(asked) if r.ended < retiring]
    assert between and all(ELM in addresses(r.answer) for r in between)  # nothing changed
    after = readers.started_after(returned)
    assert len(after) >= 40
    assert [r for r in after if ELM in addresses(r.answer)] == []
