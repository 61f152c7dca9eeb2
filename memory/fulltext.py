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

from memory.search_terms import LETTERS

# The text configurations: English stems statements ("ships" finds "shipping"); names are
# matched without stemming, a name is not a word. Both fold accents first (``unaccent``:
# "Jurgen" finds Jürgen, "strasse" finds Straße), as the SQLite index does (issue 44).
TEXT_CONFIG = "memgov_english"
NAME_CONFIG = "memgov_simple"

# Identifiers (ORD-1001, SO-77-A/3) are indexed whole and by their parts as well
# (``memgov_identifiers``, memory.search_terms.identifiers; migration 0014).
IDENTIFIERS = "memgov_identifiers"
VERSION_DOCUMENT = (
    f"to_tsvector('memgov_english'::regconfig, {IDENTIFIERS}("
    "coalesce(field, '') || ' ' || coalesce(statement, '') || ' ' || coalesce(value::text, '')))"
)
ENTITY_DOCUMENT = (
    f"to_tsvector('memgov_simple'::regconfig, {IDENTIFIERS}(name || ' ' || external_ref))"
)
SOURCE_DOCUMENT = f"to_tsvector('memgov_english'::regconfig, {IDENTIFIERS}(coalesce(content, '')))"
# A name or an alias as near spellings compare it: casefolded (``name_normalized``), then
# unaccented by an IMMUTABLE wrapper, which an index expression needs.
FOLD = "memgov_fold"
ENTITY_NAME = f"{FOLD}(name_normalized)"
ALIAS_NAME = f"{FOLD}(normalized)"

POSTGRESQL_FOLDING = (
    "CREATE EXTENSION IF NOT EXISTS unaccent",
    f"CREATE OR REPLACE FUNCTION {FOLD}(text) RETURNS text LANGUAGE sql IMMUTABLE STRICT "
    "PARALLEL SAFE AS $$ SELECT lower(public.unaccent('public.unaccent'::regdictionary, $1)) $$",
    "DO $$ BEGIN "
    "IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'memgov_english') THEN "
    "CREATE TEXT SEARCH CONFIGURATION memgov_english (COPY = english); "
    "ALTER TEXT SEARCH CONFIGURATION memgov_english ALTER MAPPING FOR hword, hword_part, "
    "word WITH public.unaccent, english_stem; END IF; "
    "IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'memgov_simple') THEN "
    "CREATE TEXT SEARCH CONFIGURATION memgov_simple (COPY = simple); "
    "ALTER TEXT SEARCH CONFIGURATION memgov_simple ALTER MAPPING FOR hword, hword_part, "
    "word WITH public.unaccent, simple; END IF; END $$",
)
# The text, then each identifier's parts joined and apart, as memory.search_terms does.
POSTGRESQL_IDENTIFIERS = (
    f"CREATE OR REPLACE FUNCTION {IDENTIFIERS}(text) RETURNS text LANGUAGE sql IMMUTABLE "  # noqa: S608 - constant SQL
    "STRICT PARALLEL SAFE AS $$ SELECT $1 || coalesce(' ' || (SELECT string_agg("
    "regexp_replace(m[1], '[^[:alnum:]]+', '', 'g') || ' ' || "
    "regexp_replace(m[1], '[^[:alnum:]]+', ' ', 'g'), ' ') FROM regexp_matches($1, "
    "'([[:alnum:]]+(?:[-/_.:#][[:alnum:]]+)+)', 'g') AS m WHERE m[1] ~ '[0-9]'), '') $$",
)
# Each index leads with the tenant (btree_gin), so one index scan reads only the tenant's
# matches. btree_gin compares a bigint only with a bigint, and a Python int is bound as a
# smaller integer: a query writes ``tenant_id = %s::bigint`` (``TENANT``), or PostgreSQL
# reads the words' matches in every tenant and ANDs a btree read of all the tenant's rows
# (a common phrase at 1M versions: 48 ms against 13).
TENANT = "tenant_id = %s::bigint"
POSTGRESQL_CREATE = (
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE EXTENSION IF NOT EXISTS btree_gin",
    *POSTGRESQL_FOLDING,
    *POSTGRESQL_IDENTIFIERS,
    "CREATE INDEX IF NOT EXISTS version_search_fulltext ON memory_memoryversion "
    f"USING gin (tenant_id, ({VERSION_DOCUMENT}))",
    "CREATE INDEX IF NOT EXISTS entity_search_fulltext ON memory_entity "
    f"USING gin (tenant_id, ({ENTITY_DOCUMENT}))",
    "CREATE INDEX IF NOT EXISTS source_search_fulltext ON memory_source "
    f"USING gin (tenant_id, ({SOURCE_DOCUMENT}))",
    "CREATE INDEX IF NOT EXISTS entity_name_folded_trgm ON memory_entity "
    f"USING gin (tenant_id, ({ENTITY_NAME}) gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS alias_folded_trgm ON memory_alias "
    f"USING gin (tenant_id, ({ALIAS_NAME}) gin_trgm_ops)",
)
# Ranking reads each match's document. Made again for the 200 matches of a common phrase
# it cost almost what finding them did (12 of 30 ms at 1M versions), so each row also
# stores it (``search_document``, migration 0016), kept by a trigger on every insert and
# on every change of its text, erasure's included; matching still reads the expression
# indexes above. ``RANKED_*`` falls back to the expression for a row not yet backfilled.
STORED_DOCUMENTS = (
    ("memory_memoryversion", VERSION_DOCUMENT, ("field", "statement", "value")),
    ("memory_source", SOURCE_DOCUMENT, ("content",)),
)
RANKED_VERSION_DOCUMENT = f"coalesce(v.search_document, {VERSION_DOCUMENT})"
RANKED_SOURCE_DOCUMENT = f"coalesce(s.search_document, {SOURCE_DOCUMENT})"


def _keeper(table: str) -> str:
    """The trigger, and its function, that keep ``table``'s stored document."""
    return f"{table}_search_document"


def stored_document_statements(table: str, document: str, columns: tuple[str, ...]) -> list[str]:
    """The column, and the trigger that keeps it: the document made from the new row's
    text (its columns read through a row alias, so the expression is the index's own)."""
    function = _keeper(table)
    new = ", ".join(f"NEW.{c}" for c in columns)
    unchanged = " AND ".join(f"NEW.{c} IS NOT DISTINCT FROM OLD.{c}" for c in columns)
    return [
        f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS search_document tsvector",
        f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$ "  # noqa: S608 - constant SQL
        f"BEGIN IF TG_OP = 'UPDATE' AND {unchanged} AND NEW.search_document IS NOT NULL "
        f"THEN RETURN NEW; END IF; NEW.search_document := (SELECT {document} FROM "
        f"(SELECT {new}) AS r({', '.join(columns)})); RETURN NEW; END $$",
        f"DROP TRIGGER IF EXISTS {function} ON {table}",
        f"CREATE TRIGGER {function} BEFORE INSERT OR UPDATE OF {', '.join(columns)} "
        f"ON {table} FOR EACH ROW EXECUTE FUNCTION {function}()",
    ]


def backfill_documents(cursor: Any, table: str, document: str, *, batch: int = 5000) -> None:
    """Each row without its document, in batches of ids in order, one short transaction
    each (the migration is not atomic): writes go on meanwhile; a rerun resumes."""
    # Ids are numbers or text: the first batch has no lower bound.
    after, bound = "", list[Any]()
    while True:
        cursor.execute(
            f"SELECT max(id) FROM (SELECT id FROM {table} WHERE TRUE {after}"  # noqa: S608 - constant SQL, bound values
            "ORDER BY id LIMIT %s) b",
            [*bound, batch],
        )
        (upto,) = cursor.fetchone()
        if upto is None:
            return
        cursor.execute(
            f"UPDATE {table} SET search_document = {document} WHERE TRUE {after}"  # noqa: S608 - constant SQL, bound values
            "AND id <= %s AND search_document IS NULL",
            [*bound, upto],
        )
        after, bound = "AND id > %s ", [upto]


def drop_stored_documents(cursor: Any) -> None:
    for table, _document, _columns in STORED_DOCUMENTS:
        cursor.execute(f"DROP TRIGGER IF EXISTS {_keeper(table)} ON {table}")
        cursor.execute(f"DROP FUNCTION IF EXISTS {_keeper(table)}()")
        cursor.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS search_document")


# Migration 0014's indexes (built concurrently there), by name: what search reads.
POSTGRESQL_IDENTIFIED = {
    name: statement
    for name in ("version_search_fulltext", "entity_search_fulltext", "source_search_fulltext")
    for statement in POSTGRESQL_CREATE
    if f" {name} " in statement
}
POSTGRESQL_DROP = (
    "DROP INDEX IF EXISTS source_search_fulltext",
    "DROP INDEX IF EXISTS source_folded_fulltext",
    "DROP INDEX IF EXISTS alias_folded_trgm",
    "DROP INDEX IF EXISTS entity_name_folded_trgm",
    "DROP INDEX IF EXISTS entity_search_fulltext",
    "DROP INDEX IF EXISTS entity_folded_fulltext",
    "DROP INDEX IF EXISTS version_search_fulltext",
    "DROP INDEX IF EXISTS version_folded_fulltext",
)
# Migration 0013's text indexes, folded but without identifiers: kept by 0014 for the
# release before it (expand, then contract: docs/operations.md), dropped by a later one;
# put back when 0014 is reversed.
POSTGRESQL_FOLDED = (
    "CREATE INDEX IF NOT EXISTS version_folded_fulltext ON memory_memoryversion USING gin "
    "(tenant_id, (to_tsvector('memgov_english'::regconfig, coalesce(field, '') || ' ' || "
    "coalesce(statement, '') || ' ' || coalesce(value::text, ''))))",
    "CREATE INDEX IF NOT EXISTS entity_folded_fulltext ON memory_entity USING gin "
    "(tenant_id, (to_tsvector('memgov_simple'::regconfig, name || ' ' || external_ref)))",
    "CREATE INDEX IF NOT EXISTS source_folded_fulltext ON memory_source USING gin "
    "(tenant_id, (to_tsvector('memgov_english'::regconfig, coalesce(content, ''))))",
)
# Before issue 44 (migration 0013 replaces them): unfolded, on the built-in configurations.
POSTGRESQL_UNFOLDED = (
    "CREATE INDEX IF NOT EXISTS version_fulltext ON memory_memoryversion USING gin (tenant_id, "
    "(to_tsvector('english'::regconfig, coalesce(field, '') || ' ' || coalesce(statement, '') "
    "|| ' ' || coalesce(value::text, ''))))",
    "CREATE INDEX IF NOT EXISTS entity_fulltext ON memory_entity USING gin (tenant_id, "
    "(to_tsvector('simple'::regconfig, name || ' ' || external_ref)))",
    "CREATE INDEX IF NOT EXISTS entity_name_trgm ON memory_entity "
    "USING gin (tenant_id, name_normalized gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS alias_trgm ON memory_alias "
    "USING gin (tenant_id, normalized gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS source_fulltext ON memory_source USING gin (tenant_id, "
    "(to_tsvector('english'::regconfig, coalesce(content, ''))))",
)
POSTGRESQL_DROP_UNFOLDED = (
    "DROP INDEX IF EXISTS source_fulltext",
    "DROP INDEX IF EXISTS alias_trgm",
    "DROP INDEX IF EXISTS entity_name_trgm",
    "DROP INDEX IF EXISTS entity_fulltext",
    "DROP INDEX IF EXISTS version_fulltext",
)

# SQLite folds case and accents in its tokenizer (``remove_diacritics 2``); the letters
# no decomposition folds are replaced in what the triggers index (memory.search_terms).
_SQLITE_LETTERS = (
    ("ß", "ss"),
    ("ẞ", "ss"),
    *LETTERS.items(),
    *((letter.upper(), plain) for letter, plain in LETTERS.items()),
)


def _sqlite_folded(expression: str) -> str:
    for letter, plain in _SQLITE_LETTERS:
        expression = f"replace({expression}, '{letter}', '{plain}')"
    return expression


def _sqlite_value(column: str) -> str:
    """A JSON value's keys and scalars, unescaped ("Stra\\u00dfe" is Straße): SQLite stores
    JSON as ASCII, PostgreSQL's ``value::text`` reads unescaped."""
    return (
        "(SELECT group_concat(coalesce(CASE WHEN typeof(j.key) = 'text' THEN j.key END, '') "  # noqa: S608 - constant SQL, a column name
        f"|| ' ' || coalesce(CASE WHEN j.type NOT IN ('object', 'array') THEN j.atom END, ''), "
        f"' ') FROM json_tree(CASE WHEN json_valid({column}) THEN {column} ELSE '\"\"' END) j)"
    )


# (FTS table, content table, rowid column, indexed columns, tokenizer)
SQLITE_TABLES: tuple[tuple[str, str, str, tuple[str, ...], str], ...] = (
    (
        "memory_version_fts",
        "memory_memoryversion",
        "id",
        ("field", "statement", "value"),
        "porter unicode61 remove_diacritics 2",
    ),
    (
        "memory_entity_fts",
        "memory_entity",
        "rowid",
        ("name", "external_ref"),
        "unicode61 remove_diacritics 2",
    ),
    ("memory_alias_fts", "memory_alias", "id", ("alias",), "unicode61 remove_diacritics 2"),
    (
        "memory_source_fts",
        "memory_source",
        "rowid",
        ("content",),
        "porter unicode61 remove_diacritics 2",
    ),
)


def _sqlite_indexed(row: str, column: str) -> str:
    """What the index holds for a column of ``row`` (``new``, ``old`` or the table): folded,
    identifiers added (the Python ``memgov_identifiers``, registered on each connection)."""
    value = f"{row}.{column}"
    text = _sqlite_value(value) if column == "value" else value
    return _sqlite_folded(f"{IDENTIFIERS}({text})")


def _sqlite_statements(
    fts: str, table: str, rowid: str, columns: tuple[str, ...], tokenize: str
) -> tuple[str, dict[str, str]]:
    cols = ", ".join(columns)
    new = ", ".join(_sqlite_indexed("new", c) for c in columns)
    old = ", ".join(_sqlite_indexed("old", c) for c in columns)
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
                _rebuild_sqlite(cursor, fts, table, rowid, columns)


def _rebuild_sqlite(
    cursor: Any, fts: str, table: str, rowid: str, columns: tuple[str, ...]
) -> None:
    """FTS5's own ``rebuild`` would index the table's text unfolded: index it as the
    triggers do."""
    folded = ", ".join(_sqlite_indexed(table, c) for c in columns)
    cursor.execute(f"INSERT INTO {fts}({fts}) VALUES ('delete-all')")  # noqa: S608 - constant SQL, bound values
    cursor.execute(
        f"INSERT INTO {fts}(rowid, {', '.join(columns)}) "  # noqa: S608 - constant SQL, bound values
        f"SELECT {table}.{rowid}, {folded} FROM {table}"
    )


def refold_sqlite(connection: Any) -> None:
    """Issue 44: the tables again, with the folding tokenizer and triggers."""
    drop_sqlite(connection)
    ensure_sqlite(connection)


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
