"""Where vectors are kept, before any model is loaded: the column and the SQLite
extension (memory.semantic reads and writes them). Free of models, so the app config can
call it from its signals."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from django.db import DatabaseError, transaction

from memory import embeddings

logger = logging.getLogger(__name__)
TABLE = "memory_embedding"  # memory.models.Embedding
_ready: dict[str, bool] = {}


def store_ready(connection: Any) -> bool:
    """The vector column exists (checked once per process and database)."""
    key = str(connection.settings_dict["NAME"])
    if key not in _ready:
        with connection.cursor() as cursor:
            _ready[key] = _has_column(connection, cursor)
    return _ready[key]


def _has_column(connection: Any, cursor: Any) -> bool:
    if TABLE not in connection.introspection.table_names(cursor):
        return False
    columns = connection.introspection.get_table_description(cursor, TABLE)
    return any(column.name == "vec" for column in columns)


def forget_store_state() -> None:
    """After the store was created or dropped in this process (migrations, tests)."""
    _ready.clear()


def load_sqlite_vec(raw_connection: Any) -> bool:
    """Load sqlite-vec into a new SQLite connection; False where that cannot be done."""
    try:
        import sqlite_vec  # noqa: PLC0415 - the semantic extra, optional
    except ImportError:
        return False
    if not hasattr(raw_connection, "enable_load_extension"):
        return False
    try:
        raw_connection.enable_load_extension(True)
        sqlite_vec.load(raw_connection)
    except Exception:  # any failure to load means: off, said once
        logger.debug("sqlite-vec did not load", exc_info=True)
        return False
    finally:
        raw_connection.enable_load_extension(False)
    return True


def ensure_store(connection: Any) -> bool:
    """Add the vector column where the database can hold it; True when it is there.

    PostgreSQL: ``CREATE EXTENSION vector`` needs a role allowed to (a superuser, or a
    trusted extension on managed services); when it fails the extension may still be
    there, created by the operator. SQLite: a BLOB column, always possible; Django
    rebuilds a SQLite table without columns it does not know, so rows found without
    their column lost their vectors and are deleted, for the worker to embed again."""
    with connection.cursor() as cursor:
        if TABLE not in connection.introspection.table_names(cursor):
            return False
        if connection.vendor == "postgresql":
            try:
                with transaction.atomic(using=connection.alias):
                    cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except DatabaseError:
                logger.info("CREATE EXTENSION vector refused; looking for it", exc_info=True)
            cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
            if cursor.fetchone() is None:
                return False
            if not _has_column(connection, cursor):
                cursor.execute(f"ALTER TABLE {TABLE} ADD COLUMN vec vector")
        elif not _has_column(connection, cursor):
            cursor.execute(f"DELETE FROM {TABLE}")  # noqa: S608 - constant SQL
            cursor.execute(f"ALTER TABLE {TABLE} ADD COLUMN vec BLOB")
        configured = embeddings.configured()
        if configured is not None:
            ensure_index(configured, connection)
    forget_store_state()
    return True


def index_name(model: embeddings.Model) -> str:
    return f"embedding_hnsw_{hashlib.sha256(model.name.encode()).hexdigest()[:12]}"


def ensure_index(model: embeddings.Model, using: Any) -> None:
    """PostgreSQL: the model's HNSW indexes, partial indexes on its rows with their vectors
    cast to its dimensions (pgvector's way to index vectors of one length in a mixed
    column). Made by ``migrate`` and ``manage.py embed`` for the configured model, before
    its vectors are stored, so they grow with the rows.

    The versions' graph holds only versions (a search walking it for facts does not
    wade through entities' names) at half precision: half the size, so it stays in
    memory, for no change in what is found (decision 0022). The entities' graph, a
    twentieth of the rows, keeps full precision."""
    if using.vendor != "postgresql":
        return
    name, rows = index_name(model), f"WHERE model = {model_literal(model)}"
    with using.cursor() as cursor:
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {name}_versions ON {TABLE} USING hnsw "
            f"((vec::halfvec({model.dimensions})) halfvec_cosine_ops) "
            f"{rows} AND version_id IS NOT NULL"
        )
        cursor.execute(f"DROP INDEX IF EXISTS {name}")  # one graph for both, before
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {name}_entities ON {TABLE} USING hnsw "
            f"((vec::vector({model.dimensions})) vector_cosine_ops) "
            f"{rows} AND entity_id IS NOT NULL"
        )


def model_literal(current: embeddings.Model) -> str:
    """The model's name as an SQL literal: written into the statement, not bound, so that
    PostgreSQL can match the partial HNSW index's ``WHERE model = …`` in every plan."""
    return "'" + current.name.replace("'", "''") + "'"
