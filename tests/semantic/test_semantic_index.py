"""The HNSW graph a search walks (issue 45): PostgreSQL uses an index only for its own
expression, so a search whose ORDER BY differs by a cast compares every vector there is."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from memory import embeddings, semantic, vectors
from tests.conftest import World, needs
from tests.semantic.support import Shop, build_shop

pytestmark = [pytest.mark.django_db, needs("postgres")]


@pytest.fixture
def shop(world: World, django_capture_on_commit_callbacks: Any) -> Shop:
    return build_shop(world, django_capture_on_commit_callbacks)


def test_a_search_across_the_tenant_walks_the_versions_graph_not_every_vector(
    world: World, shop: Shop
):
    # The ORDER BY must be the index's expression to the letter, or PostgreSQL compares
    # every vector of every tenant, silently: a million rows where there were a thousand.
    model = embeddings.configured()
    assert model is not None
    with connection.cursor() as cursor:  # the test's deferred checks, first
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    vectors.ensure_index(model, connection)  # as migrate and manage.py embed make it
    statements: list[str] = []

    def explained(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "memory_embedding m" in sql and "version_id IS NOT NULL" in sql:
            with connection.connection.cursor() as cursor:  # not through this wrapper
                # A few rows: without these PostgreSQL would sort them, index or not.
                cursor.execute("SET LOCAL enable_seqscan = off")
                cursor.execute("SET LOCAL enable_sort = off")
                cursor.execute(f"EXPLAIN {sql}", params)
                statements.append("\n".join(row[0] for row in cursor.fetchall()))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(explained):
        semantic.nearest_versions(
            model,
            world.principal("agent"),
            semantic.query_vector(model, "when may the trucks come"),
            statuses=["active"],
            narrowing=("", []),
            limit=5,
        )
    assert statements and f"{vectors.index_name(model)}_versions" in statements[0]
