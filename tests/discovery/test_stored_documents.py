"""Ranking reads the search document each version and source stores (memory.fulltext,
migration 0016): the trigger keeps it equal to what the text makes, on insert and on
every change of the text, and the migration's backfill fills the rows before it."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from memory import fulltext
from memory.models import MemoryVersion
from tests.conftest import World, needs
from tests.discovery.support import get, seed

pytestmark = [needs("postgres"), pytest.mark.django_db]


def _stale(table: str, document: str) -> tuple[int, int]:
    """Rows whose stored document is not what their text makes; rows in all."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FILTER (WHERE search_document IS DISTINCT FROM {document}), "  # noqa: S608 - constant SQL
            f"count(*) FROM {table}"
        )
        stale, rows = cursor.fetchone()
    return stale, rows


def _stored(version_pk: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT search_document::text FROM memory_memoryversion WHERE id = %s", [version_pk]
        )
        return str(cursor.fetchone()[0])


def test_every_version_and_source_stores_the_document_its_text_makes(
    world: World, django_capture_on_commit_callbacks: Any
):
    seed(world, django_capture_on_commit_callbacks)
    for table, document, _columns in fulltext.STORED_DOCUMENTS:
        stale, rows = _stale(table, document)
        assert rows and not stale, table


def test_a_changed_statement_is_stored_again_and_a_status_change_keeps_it(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)
    version = MemoryVersion.objects.get(item_id=seeds.address, number=1)
    assert "'elm'" in _stored(version.pk)

    # What erasure and retention do to a version's text: the old words leave the index.
    MemoryVersion.objects.filter(pk=version.pk).update(statement="[erased]", value=None)
    assert "'elm'" not in _stored(version.pk)
    assert "'eras'" in _stored(version.pk)

    MemoryVersion.objects.filter(pk=version.pk).update(status="retired")
    assert _stale("memory_memoryversion", fulltext.VERSION_DOCUMENT)[0] == 0


def test_ranking_reads_the_stored_document(world: World, django_capture_on_commit_callbacks: Any):
    """Matching reads the expression index; the rank is the stored document's."""
    seeds = seed(world, django_capture_on_commit_callbacks)

    def score() -> float:
        found = get(world, "agent", "/search", q="delivery address").json()["results"]
        return float(next(c["score"] for c in found if c["id"] == seeds.address))

    ranked = score()
    with connection.cursor() as cursor:
        # Stored as if the text said only "delivery": ranked lower (nothing covers both).
        cursor.execute(
            "UPDATE memory_memoryversion SET search_document = "
            "to_tsvector('memgov_english', 'delivery') WHERE item_id = %s",
            [seeds.address],
        )
    assert score() < ranked


def test_the_backfill_fills_every_row_without_a_document_in_batches(
    world: World, django_capture_on_commit_callbacks: Any
):
    seed(world, django_capture_on_commit_callbacks)
    with connection.cursor() as cursor:
        for table, document, _columns in fulltext.STORED_DOCUMENTS:
            # As before migration 0016 (the trigger watches the text, not this column).
            cursor.execute(f"UPDATE {table} SET search_document = NULL")  # noqa: S608 - constant SQL
            assert _stale(table, document)[0]

            fulltext.backfill_documents(cursor, table, document, batch=1)

            assert _stale(table, document)[0] == 0, table
