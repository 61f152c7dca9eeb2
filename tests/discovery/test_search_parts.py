"""The parts of discovery that hold without a request: the query language on SQLite, the
FTS5 index surviving a table rebuild, and the search line of ``make bench``'s targets."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from bench.run_all import targets
from memory import fulltext
from memory.models import Entity
from memory.search import SearchQuery, fts5_query, lexical
from memory.search_terms import fold, parse, tsquery


def test_the_query_language_is_parsed_once_for_both_backends():
    assert fts5_query("Acme procurement") == '("acme") AND ("procurement")'
    assert tsquery(parse("Acme procurement")) == "('acme') & ('procurement')"
    assert fts5_query('"Elm Street" or Dock') == '("elm street" OR "dock")'
    assert tsquery(parse('"Elm Street" or Dock')) == "('elm street' | 'dock')"
    assert fts5_query("address -office") == '(("address")) NOT ("office")'
    assert tsquery(parse("address -office")) == "('address') & !'office'"
    assert fts5_query("?! -- ()") == ""
    assert fts5_query("-only") == ""


def test_a_detached_dash_is_no_exclusion_and_stop_words_are_no_terms():
    assert parse("- Dana") == parse("Dana")
    assert tsquery(parse("- Dana")) == "('dana')"
    assert tsquery(parse("the Dana is")) == "('dana')"
    for nothing in ("-Dana", "is -zzz", "the -Dana", "a or", "who is", '"the"'):
        assert not parse(nothing), nothing


def test_accents_and_sharp_s_fold_as_the_indexes_fold_them():
    assert fold("Jürgen Müller, Zoë, Hauptstraße, ẞ, Ærø, Łódź") == (
        "jurgen muller, zoe, hauptstrasse, ss, aero, lodz"
    )
    assert fts5_query("Hauptstraße") == fts5_query("HAUPTSTRASSE") == '("hauptstrasse")'


def test_operators_typed_by_a_caller_are_words_not_fts5_or_tsquery_syntax():
    assert fts5_query('NEAR(x) col:val "unclosed') == (
        '("near x") AND ("col val") AND ("unclosed")'
    )
    assert tsquery(parse("o'brien x\\y &|!:*")) == "('o brien') & ('x y')"


@pytest.mark.django_db
def test_the_sqlite_index_is_rebuilt_when_a_table_rebuild_dropped_its_triggers(world: Any):
    if connection.vendor != "sqlite":
        pytest.skip("FTS5 is the SQLite index")
    Entity.objects.create(
        tenant=world.tenant, kind="site", name="Wharf Nine", name_normalized="wharf nine"
    )
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER memory_entity_fts_ai")
        cursor.execute("INSERT INTO memory_entity_fts(memory_entity_fts) VALUES ('delete-all')")
    Entity.objects.create(
        tenant=world.tenant, kind="site", name="Wharf Ten", name_normalized="wharf ten"
    )

    fulltext.ensure_sqlite(connection)

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.name FROM memory_entity_fts JOIN memory_entity e "
            "ON e.rowid = memory_entity_fts.rowid WHERE memory_entity_fts MATCH 'wharf' "
            "ORDER BY e.name"
        )
        assert [row[0] for row in cursor.fetchall()] == ["Wharf Nine", "Wharf Ten"]
        cursor.execute("SELECT name FROM sqlite_master WHERE name = 'memory_entity_fts_ai'")
        assert cursor.fetchall()


def test_make_bench_judges_search_p95_at_one_client_against_50_ms():
    report = {
        "size": "1m",
        "database": "memgov_bench_1m",
        "overall": {"p95_ms": 61.5},
        "target": {"p95_ms_at_most": 50.0},
        "machine": {"load_after": [0.4]},
    }

    (line,) = targets({"search": report})

    assert line["target"] == "search p95 ms, 1 client, 1m"
    assert (line["measured"], line["wanted"], line["met"]) == (61.5, "≤ 50 ms", False)


SEARCHED = ("memory_memoryversion", "memory_entity", "memory_alias", "memory_source")
TENANT_LED = (
    "version_search_fulltext",
    "entity_search_fulltext",
    "source_search_fulltext",
    "entity_name_folded_trgm",
    "alias_folded_trgm",
)


def _only_the_search_indexes() -> None:
    """Drops, in the test's transaction, every other index of the searched tables but the
    primary keys: the only way left to read a tenant's rows is then a search index, which
    serves the tenant only if the statement's types let it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indexrelid::regclass::text, i.indrelid::regclass::text, c.conname "
            "FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid "
            "WHERE i.indrelid::regclass::text = ANY(%s) AND NOT i.indisprimary "
            "AND NOT i.indexrelid::regclass::text = ANY(%s)",
            [list(SEARCHED), list(TENANT_LED)],
        )
        for index, table, constraint in cursor.fetchall():
            if constraint:
                cursor.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{constraint}"')
            else:
                cursor.execute(f'DROP INDEX "{index}"')


@pytest.mark.django_db
def test_every_search_index_is_read_for_the_callers_tenant_alone(world: Any):
    """The search indexes lead with the tenant (memory.fulltext.TENANT): a statement that
    compares it with an integer of another type reads the words' matches in every tenant
    instead, which at 1M versions cost a common phrase 48 ms against 13."""
    if connection.vendor != "postgresql":
        pytest.skip("btree_gin is PostgreSQL's")
    _only_the_search_indexes()
    plans: list[str] = []

    def explained(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if any(word in sql for word in ("@@", "<%", " LIKE ")):
            with connection.connection.cursor() as cursor:  # not through this wrapper
                cursor.execute("SET LOCAL enable_seqscan = off")  # a few rows: else read all
                cursor.execute(f"EXPLAIN {sql}", params)
                plans.append("\n".join(row[0] for row in cursor.fetchall()))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(explained):
        lexical(world.principal("agent"), SearchQuery(q="Custmer 30948 delivery address"))

    # Names and aliases may be read by either of their tables' search indexes.
    read = {index for plan in plans for index in TENANT_LED if f" on {index} " in plan}
    assert {"version_search_fulltext", "source_search_fulltext"} <= read, plans
    assert read & {"entity_search_fulltext", "entity_name_folded_trgm"}, plans
    assert "alias_folded_trgm" in read, plans
    for plan in plans:
        lines = plan.splitlines()
        for n, line in enumerate(lines):
            if any(f" on {index} " in line for index in TENANT_LED):
                assert "tenant_id = " in lines[n + 1], plan
