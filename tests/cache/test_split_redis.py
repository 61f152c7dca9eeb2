"""Issue 11, point 7: fail-closed invalidation. A retirement made through a web node whose
Redis is unreachable returns 200; a healthy node that had the answer cached must not serve
it once the retirement has returned. The committed generation (memory.cache: a counter
bumped in the change's own transaction and named in every entry's key) makes that hold
without the Redis bump."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

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


def test_a_retirement_through_a_node_without_redis_ends_the_cached_answer_everywhere(
    private_redis, gunicorn_server, node_without_redis, world
):
    subject = dana(world)
    version = propose_address(world, subject)
    assert_active(version)

    with Readers(gunicorn_server, world.keys["agent"], {"subject": subject}) as readers:
        readers.wait_for(20)
        assert private_redis.entries(subject), "the healthy node is not using the cache"
        status, body = node_without_redis.call(
            "POST",
            f"/api/v1/memories/{version.item_id}/retire",
            world.keys["rita"],
            {"reason": "Dana moved"},
        )
        returned = time.monotonic()
        readers.wait_for(40, after=returned)

    assert status == 200, body
    after = readers.started_after(returned)
    assert {r.status for r in after} == {200}
    assert len(after) >= 40
    assert [r for r in after if ELM in addresses(r.answer)] == []
