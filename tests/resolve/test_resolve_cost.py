"""The cost of a resolve does not grow with the number of candidates: one query selects
them all, and serializing facts or recording a retrieval adds no query per fact.

A resolve is two queries: the API key (with tenant and user), and the candidates, which
carry the tenant's current policy. A ``task_id`` adds the retrieval record and one bulk
insert of what it used (the savepoint pair around them is the test transaction's). A
subject with no candidate costs one more query, for the policy alone."""

from __future__ import annotations

from typing import Any

import pytest

from tests.resolve.conftest import Story, resolve

QUERIES = {"plain": 2, "explain": 2, "task": 6}
REQUESTS: dict[str, dict[str, Any]] = {
    "plain": {},
    "explain": {"explain": True},
    "task": {"task_id": "dispatch-1"},
}


@pytest.fixture(autouse=True)
def _no_cache(settings):
    """Count database work: the Redis cache (on when REDIS_URL is set) would hide it."""
    settings.MEMGOV_RESOLVE_CACHE = False


def subject_with_facts(story: Story, count: int) -> str:
    """A customer with ``count`` active preferences, all applicable, one per field."""
    subject = story.entity(f"Customer with {count} facts", "customer")
    for n in range(count):
        story.activate(
            kind="preference",
            subject=subject,
            field=f"field_{n:02d}",
            value=n,
            scope={},
            expires_at=None,
        )
    return subject


@pytest.fixture
def one_and_thirty(story: Story) -> tuple[str, str]:
    return subject_with_facts(story, 1), subject_with_facts(story, 30)


@pytest.mark.parametrize("shape", ["plain", "explain", "task"])
def test_query_count_is_the_same_for_1_and_30_candidates(
    world, one_and_thirty, django_assert_num_queries, shape
):
    one, thirty = one_and_thirty
    # Every key, a person's or an agent's, is read on every request (decision 0018), so
    # the count is exact in every environment.
    client = world.client("rita")
    resolve(client, subject=one)  # the key's last_used_at is written once a minute, not here

    with django_assert_num_queries(QUERIES[shape]):
        small = resolve(client, subject=one, **REQUESTS[shape])
    with django_assert_num_queries(QUERIES[shape]):
        large = resolve(client, subject=thirty, **REQUESTS[shape])

    assert len(small["facts"]) == 1
    assert len(large["facts"]) == 30


def test_a_subject_without_candidates_reads_the_policy_on_its_own(
    world, story, django_assert_num_queries
):
    client = world.client("rita")
    quiet = story.entity("Quiet Customer", "customer")
    resolve(client, subject=quiet)

    # the key, the candidates (none), the subject exists, the policy
    with django_assert_num_queries(4):
        body = resolve(client, subject=quiet)

    assert body["policy_version"] == "1"
