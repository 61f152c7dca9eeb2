"""The full-text indexes discovery reads (docs/design.md, Discovery).

PostgreSQL: GIN expression indexes led by ``tenant_id`` (``btree_gin``), so a search is
scoped to the tenant inside the index before any ranking, and ``pg_trgm`` indexes on
normalized names and aliases for near spellings. The search selector must use exactly the
expressions below for the planner to use the indexes.

SQLite (``make run``): external-content FTS5 tables kept current by triggers. Django
rebuilds a SQLite table to alter it, which drops its triggers and may renumber its rowids,
so ``ensure_sqlite`` runs after every ``migrate`` (memory.apps) and rebuilds the index
whenever a trigger had to be put back.
"""

from __future__ import annotations

from typing import Any

# The text configuration: English stems statements ("ships" finds "shipping"); names are
# matched without stemming, a name is not a word.
TEXT_CONFIG = "english"
NAME_CONFIG = "simple"

VERSION_DOCUMENT = (
    "to_tsvector('english'::regconfig, "
    "coalesce(field, '') || ' ' || coalesce(statement, '') || ' ' || coalesce(value::text, ''))"
)
ENTITY_DOCUMENT = "to_tsvector('simple'::regconfig, name || ' ' || external_ref)"
SOURCE_DOCUMENT = "to_tsvector('english'::regconfig, coalesce(content, ''))"

POSTGRESQL_CREATE = (
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    "CREATE INDEX IF NOT EXISTS version_fulltext ON memory_memoryversion "
    f"USING gin (tenant_id, ({VERSION_DOCUMENT}))",
    "CREATE INDEX IF NOT EXISTS entity_fulltext ON memory_entity "
    f"USING gin (tenant_id, ({ENTITY_DOCUMENT}))",
    "CREATE INDEX IF NOT EXISTS entity_name_trgm ON memory_entity "
    "USING gin (tenant_id, name_normalized gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS alias_trgm ON memory_alias "
    "USING gin (tenant_id, normalized gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS source_fulltext ON memory_source "
    f"USING gin (tenant_id, ({SOURCE_DOCUMENT}))",
)
POSTGRESQL_DROP = (
    "DROP INDEX IF EXISTS source_fulltext",
    "DROP INDEX IF EXISTS alias_trgm",
    "DROP INDEX IF EXISTS entity_name_trgm",
    "DROP INDEX IF EXISTS entity_fulltext",
    "DROP INDEX IF EXISTS version_fulltext",
)

# (FTS table, content table, rowid column, indexed columns, tokenizer)
SQLITE_TABLES: tuple[tuple[str, str, str, tuple[str, ...], str], ...] = (
    (
        "memory_version_fts",
        "memory_memoryversion",
        "id",
        ("field", "statement", "value"),
        "porter unicode61",
    ),
    ("memory_entity_fts", "memory_entity", "rowid", ("name", "external_ref"), "unicode61"),
    ("memory_alias_fts", "memory_alias", "id", ("alias",), "unicode61"),
    ("memory_source_fts", "memory_source", "rowid", ("content",), "porter unicode61"),
)


def _sqlite_statements(
    fts: str, table: str, rowid: str, columns: tuple[str, ...], tokenize: str
) -> tuple[str, dict[str, str]]:
    cols = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    delete = f"INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.{rowid}, {old});"  # noqa: S608 - constant SQL, bound values
    insert = f"INSERT INTO {fts}(rowid, {cols}) VALUES (new.{rowid}, {new});"  # noqa: S608 - constant SQL, bound values
    table_sql = (
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5({cols}, content='{table}', "
        f"content_rowid='{rowid}', tokenize='{tokenize}')"
    )
    triggers = {
        f"{fts}_ai": f"AFTER INSERT ON {table} BEGIN {insert} END",
        f"{fts}_ad": f"AFTER DELETE ON {table} BEGIN {delete} END",
        f"{fts}_au": f"AFTER UPDATE ON {table} BEGIN {delete} {insert} END",
    }
    return table_sql, triggers


def ensure_sqlite(connection: Any) -> None:
    """Create the FTS5 tables and triggers that are missing; rebuild a table whose
    triggers were missing (its content may have changed without them)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')")
        present = {row[0] for row in cursor.fetchall()}
        for fts, table, rowid, columns, tokenize in SQLITE_TABLES:
            if table not in present:
                continue
            table_sql, triggers = _sqlite_statements(fts, table, rowid, columns, tokenize)
            cursor.execute(table_sql)
            missing = [name for name in triggers if name not in present]
            for name in missing:
                cursor.execute(f"CREATE TRIGGER IF NOT EXISTS {name} {triggers[name]}")
            if missing:
                cursor.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")  # noqa: S608 - constant SQL, bound values


def drop_sqlite(connection: Any) -> None:
    with connection.cursor() as cursor:
        for fts, _table, _rowid, _columns, _tokenize in SQLITE_TABLES:
            for suffix in ("ai", "ad", "au"):
                cursor.execute(f"DROP TRIGGER IF EXISTS {fts}_{suffix}")
            cursor.execute(f"DROP TABLE IF EXISTS {fts}")


def create(connection: Any) -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for statement in POSTGRESQL_CREATE:
                cursor.execute(statement)
    elif connection.vendor == "sqlite":
        ensure_sqlite(connection)


def drop(connection: Any) -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for statement in POSTGRESQL_DROP:
                cursor.execute(statement)
    elif connection.vendor == "sqlite":
        drop_sqlite(connection)
