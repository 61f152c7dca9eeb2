"""The candidate query exists three times for speed (issue 14): the ORM queryset (SQLite,
and the reference), the statement written out for PostgreSQL (resolve's hot path), and
the in-memory pool that scenario checks ask a version's scenarios of. All three must give
the same versions for every question a resolve or a scenario check can ask, and a
resolve costs one query cold."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from approvals.services import memory_retire
from memory import candidates, resolution
from memory.candidates import (
    CandidatePool,
    CandidateRequest,
    candidate_queryset,
    load_candidates,
    to_candidate,
)
from memory.models import MemoryItem, MemoryVersion
from tests.cache.builders import now_request
from tests.conftest import later, needs
from tests.resolve.conftest import Story

pytestmark = [needs("postgres")]

FIELD = "delivery_window"
SCOPES: list[dict[str, str]] = [{}, {"task": "order-1"}, {"task": "order-2"}, {}]
CONTEXTS: list[dict[str, str]] = [
    {},
    {"task": "order-1"},
    {"task": "order-2", "project": "P-9"},
    {"task": "order-1", "project": "P-9"},
    {"project": "P-10"},
]


@pytest.fixture
def crowded(story: Story) -> tuple[str, list[MemoryVersion], list[str]]:
    """One customer's field with active, retired and pending versions whose evidence
    overlaps (two items cite the same message), and a second field beside it."""
    subject = story.entity("Dana Kim", "customer")
    shared = story.source("Dana: mornings, for every order")
    versions = []
    for n, scope in enumerate(SCOPES):
        proposed = story.propose(
            kind="preference",
            subject=subject,
            field=FIELD,
            value=f"window {n}",
            scope=scope,
            expires_at=None,
            sources=[shared] if n % 2 else None,
        )
        # Active, or failed at the gate (a conflict): rows the query must filter either way.
        versions.append(proposed)
    story.activate(
        kind="preference", subject=subject, field="phone", value="555", scope={}, expires_at=None
    )
    with story.on_commit(execute=True):
        memory_retire(
            principal=story.world.principal("rita"),
            item=MemoryItem.objects.get(pk=versions[0].item_id),
            reason="Dana moved",
        )
    pending = story.propose(
        kind="task_fact",
        subject=subject,
        field=FIELD,
        value="evenings",
        scope={"task": "order-2", "project": "P-9"},
        expires_at=later(),
        sources=[story.source("Order 2 ships at night", "business_record")],
    )
    versions.append(pending)
    cited = sorted({s for v in versions for s in v.source_ids})
    return subject, versions, cited


def _random_request(
    rng: random.Random,
    tenant_id: int,
    subject: str,
    versions: list[MemoryVersion],
    cited: list[str],
) -> CandidateRequest:
    chosen = rng.choice(versions)
    revoked = rng.random() < 0.5
    return CandidateRequest(
        tenant_id=tenant_id,
        subject_id=subject,
        fields=rng.choice([(FIELD,), (FIELD, "phone"), None]),
        context=rng.choice(CONTEXTS),
        known_at=timezone.now() + timedelta(seconds=rng.choice([-3600, 0, 5])),
        prefilter=rng.random() < 0.8,
        include=chosen.pk if rng.random() < 0.6 else None,
        exclude_item=chosen.item_id if rng.random() < 0.4 else None,
        exclude_version=rng.choice(versions).pk if rng.random() < 0.3 else None,
        revoked_sources=rng.sample(cited, k=rng.randint(1, len(cited))) if revoked else (),
        revocation_spares_item=rng.choice(versions).item_id
        if revoked and rng.random() < 0.7
        else None,
    )


def _sorted(candidates: list[Any]) -> list[Any]:
    return sorted(candidates, key=lambda c: (c.memory_id, c.version))


def test_the_written_out_statement_and_the_pool_select_what_the_orm_selects(
    world: Any, crowded: tuple[str, list[MemoryVersion], list[str]]
) -> None:
    subject, versions, cited = crowded
    pool = CandidatePool.load(world.tenant.pk, subject, (FIELD, "phone"))
    rng = random.Random(14)
    pooled = 0
    for _ in range(400):
        request = _random_request(rng, world.tenant.pk, subject, versions, cited)
        expected = _sorted(
            [
                to_candidate(row, request.known_at, request.include)
                for row in candidate_queryset(request)
            ]
        )
        assert _sorted(load_candidates(request)) == expected, request
        if pool.serves(request):
            pooled += 1
            assert _sorted(pool.candidates(request)) == expected, request
    assert pooled > 100  # the pool answered most questions itself


def test_a_cold_resolve_is_one_query(
    world: Any,
    crowded: tuple[str, list[MemoryVersion], list[str]],
    settings: Any,
    django_assert_num_queries: Any,
) -> None:
    """The candidates and the tenant's policy in one statement (the API key is the
    authentication's business, counted in test_resolve_cost)."""
    settings.MEMGOV_RESOLVE_CACHE = False
    subject, _, _ = crowded
    request = now_request(subject, context={"task": "order-1"})
    with django_assert_num_queries(1):
        body = resolution.resolve_for(world.principal("agent"), request)
    assert {fact["field"] for fact in body["facts"]} == {FIELD, "phone"}


def test_every_cold_resolve_on_a_connection_runs_one_prepared_statement(
    world: Any, crowded: tuple[str, list[MemoryVersion], list[str]], settings: Any
) -> None:
    """Planning the statement took longer than running it: it is prepared on first use,
    and later resolves on the connection, whatever they ask, reuse it."""
    from django.db import connection

    settings.MEMGOV_RESOLVE_CACHE = False
    subject, _, _ = crowded

    def resolve(task: str) -> Any:
        request = resolution.ResolveRequest(
            subject=subject,
            context={"task": task},
            fields=None,
            valid_at=None,
            known_at=None,
            task_id=None,
            explain=False,
        )
        return resolution.resolve_for(world.principal("agent"), request)

    def prepared() -> set[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            return {statement for (statement,) in cursor.fetchall()}

    before = prepared()
    answers = [resolve(f"order-{i % 2}") for i in range(12)]

    [statement] = prepared() - before
    assert 'FROM "memory_memoryversion" v WHERE' in statement
    assert all(a["facts"] == answers[i % 2]["facts"] for i, a in enumerate(answers))
    assert answers[0]["facts"] != answers[1]["facts"]


def test_an_answer_from_the_orms_rows_is_the_statements_answer(
    world, story: Story, monkeypatch: pytest.MonkeyPatch
):
    """Elsewhere than PostgreSQL (``make run`` on SQLite) the candidates are the ORM's
    rows, which carry no column of the hot path's own (a key check): the same answer."""
    subject = story.entity("Dana Kim", "customer")
    for n, scope in enumerate(SCOPES):
        story.activate(
            kind="preference",
            subject=subject,
            field=f"{FIELD}_{n}",
            value=n,
            scope=scope,
            expires_at=later(3),
        )
    request = now_request(subject, context={"task": "order-1"})
    now = timezone.now()
    statement = resolution.resolution_body(
        resolution.decide(world.principal("agent"), request, now), explain=False
    )

    monkeypatch.setattr(
        candidates, "candidate_rows", lambda request: list(candidate_queryset(request))
    )
    orm = resolution.resolution_body(
        resolution.decide(world.principal("agent"), request, now), explain=False
    )

    assert orm == statement
    assert [fact["value"] for fact in orm["facts"]] == [0, 1, 3]
