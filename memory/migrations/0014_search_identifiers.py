"""Search indexes identifiers whole and by their parts (issue 44, point 4): ``ORD-1001`` is
also ``ord1001`` and ``ord 1001``, so ``1001`` and ``ORD1001`` find the order. PostgreSQL:
an IMMUTABLE ``memgov_identifiers`` in new text indexes, built concurrently (writes go on
meanwhile); 0013's indexes stay for the previous release's pods and are dropped by a later
release (expand, then contract). SQLite: the FTS5 tables rebuilt with triggers that index
the same (memory.fulltext)."""

from typing import Any

from django.db import migrations

from memory import fulltext


def identify(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for statement in fulltext.POSTGRESQL_IDENTIFIERS:
                cursor.execute(statement)
            for name, statement in fulltext.POSTGRESQL_IDENTIFIED.items():
                # A build interrupted before leaves an invalid index IF NOT EXISTS would keep.
                cursor.execute(
                    "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                    "WHERE c.relname = %s AND NOT i.indisvalid",
                    [name],
                )
                if cursor.fetchone():
                    cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
                cursor.execute(
                    statement.replace(
                        "CREATE INDEX IF NOT EXISTS", "CREATE INDEX CONCURRENTLY IF NOT EXISTS"
                    )
                )
    elif connection.vendor == "sqlite":
        fulltext.refold_sqlite(connection)


def unidentify(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for statement in fulltext.POSTGRESQL_FOLDED:
                cursor.execute(statement)
            for name in fulltext.POSTGRESQL_IDENTIFIED:
                cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction
    dependencies = [("memory", "0013_search_unaccent")]

    operations = [migrations.RunPython(identify, unidentify)]
