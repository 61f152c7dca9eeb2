"""Each version and source stores its search document (memory.fulltext.STORED_DOCUMENTS):
ranking a common phrase's matches read it instead of making it again. Expand only: a
nullable column and the trigger that fills it (the previous release's pods write through
it), then the rows before it in batches, each its own transaction. SQLite ranks with
FTS5's own index: nothing to do there."""

from typing import Any

from django.db import migrations

from memory import fulltext


def store(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for table, document, columns in fulltext.STORED_DOCUMENTS:
            for statement in fulltext.stored_document_statements(table, document, columns):
                cursor.execute(statement)
        for table, document, _columns in fulltext.STORED_DOCUMENTS:
            fulltext.backfill_documents(cursor, table, document)


def unstore(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            fulltext.drop_stored_documents(cursor)


class Migration(migrations.Migration):
    atomic = False  # the backfill commits batch by batch
    dependencies = [("memory", "0015_embedding")]

    operations = [migrations.RunPython(store, unstore)]
