"""How search reads the entities a query names in part (memory.search, ``mentioned``):
each group of the query reads its own few names, external refs and aliases, all groups
in one statement, so a word thousands of names share ("Customer") leaves room for the
rare one beside it ("30948"), whose entity is the one the query names."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection

from core.sql import fetched
from memory import fulltext, search_terms

# An erased entity is never a candidate, nor followed to facts (issue 42).
LIVE = "e.erased_at IS NULL"
_COLUMNS = "e.id, e.kind, e.name, e.external_ref, e.erased_at"


@contextmanager
def planned_for_their_words() -> Iterator[None]:
    """Names read by plans made for the words given, not by the generic plan a prepared
    statement falls back to after five runs: the best way to read names near "customer
    16716" (the tenant's names in order: most are near enough) is the worst for a rare
    word, and the generic plan for both read every name's trigrams (22 ms instead of 4
    at 1M versions). The rest of the search keeps its prepared plans. PostgreSQL only."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_custom_plan")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL plan_cache_mode TO DEFAULT")


def near_on_postgresql(
    tenant: int, norm: str, threshold: float, limit: int
) -> list[tuple[tuple[Any, ...], str, float, str]]:
    """Names and aliases at ``threshold`` word similarity or above, ``limit`` of each: the
    threshold set for this transaction (``<%`` reads it; pg_trgm's default is 0.6)."""
    fetched("SELECT set_config('pg_trgm.word_similarity_threshold', %s, true)", [str(threshold)])
    name = fulltext.ENTITY_NAME.replace("name_normalized", "e.name_normalized")
    alias = fulltext.ALIAS_NAME.replace("normalized", "a.normalized")
    with planned_for_their_words():
        names = fetched(
            f"SELECT {_COLUMNS}, e.name_normalized, word_similarity(%s, {name}) "  # noqa: S608 - constant SQL, bound values
            f"FROM memory_entity e WHERE e.{fulltext.TENANT} AND {LIVE} "
            f"AND %s <%% {name} LIMIT %s",
            [norm, tenant, norm, limit],
        )
        aliases = fetched(
            f"SELECT {_COLUMNS}, a.normalized, word_similarity(%s, {alias}) "  # noqa: S608 - constant SQL, bound values
            "FROM memory_alias a JOIN memory_entity e ON e.id = a.entity_id "
            f"WHERE a.{fulltext.TENANT} AND {LIVE} AND %s <%% {alias} LIMIT %s",
            [norm, tenant, norm, limit],
        )
    return [(tuple(row), n, float(sim), "name") for *row, n, sim in names] + [
        (tuple(row), n, float(sim), "alias") for *row, n, sim in aliases
    ]


def on_postgresql(
    tenant: int, groups: Sequence[tuple[search_terms.Term, ...]], limit: int
) -> list[tuple[Any, ...]]:
    """Each group's rows whole, not their ids joined back (PostgreSQL would read every
    entity to join a few hundred ids): names and refs by their text index, aliases
    ("Harbor Foods") by their trigram index; the caller checks the words."""
    by_name = (
        f"(SELECT {_COLUMNS} FROM memory_entity e WHERE e.{fulltext.TENANT} AND "  # noqa: S608 - constant SQL, bound values
        f"{fulltext.ENTITY_DOCUMENT} @@ to_tsquery('{fulltext.NAME_CONFIG}', %s) "
        f"AND {LIVE} LIMIT %s)"
    )
    alias = fulltext.ALIAS_NAME.replace("normalized", "a.normalized")
    branches: list[str] = []
    params: list[Any] = []
    for group in groups:
        holds = " OR ".join([f"{alias} LIKE %s"] * len(group))
        branches += [
            by_name,
            f"(SELECT {_COLUMNS} FROM memory_alias a JOIN memory_entity e ON e.id = a.entity_id "  # noqa: S608 - constant SQL, bound values
            f"WHERE a.{fulltext.TENANT} AND ({holds}) AND {LIVE} LIMIT %s)",
        ]
        params += [tenant, search_terms.tsquery(search_terms.Terms((group,), ())), limit]
        params += [tenant, *(f"%{_like(term.text)}%" for term in group), limit]
    with planned_for_their_words():
        return fetched(" UNION ".join(branches), params)


def on_sqlite(
    tenant: int, groups: Sequence[tuple[search_terms.Term, ...]], limit: int
) -> list[tuple[Any, ...]]:
    """The same from the FTS5 tables of names and refs, and of aliases."""
    by_name = (
        f"SELECT * FROM (SELECT {_COLUMNS} FROM memory_entity_fts "  # noqa: S608 - constant SQL, bound values
        "JOIN memory_entity e ON e.rowid = memory_entity_fts.rowid "
        f"WHERE memory_entity_fts MATCH %s AND e.tenant_id = %s AND {LIVE} LIMIT %s)"
    )
    by_alias = (
        f"SELECT * FROM (SELECT {_COLUMNS} FROM memory_alias_fts "  # noqa: S608 - constant SQL, bound values
        "JOIN memory_alias a ON a.id = memory_alias_fts.rowid "
        "JOIN memory_entity e ON e.id = a.entity_id "
        f"WHERE memory_alias_fts MATCH %s AND e.tenant_id = %s AND {LIVE} LIMIT %s)"
    )
    params: list[Any] = []
    for group in groups:
        match = search_terms.fts5(search_terms.Terms((group,), ()))
        params += [match, tenant, limit, match, tenant, limit]
    return fetched(" UNION ".join([by_name, by_alias] * len(groups)), params)


def _like(text: str) -> str:
    """``text`` matched literally by LIKE."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
