"""Search folds accents on both backends (issue 44): ``unaccent`` in PostgreSQL's text
configurations and an IMMUTABLE ``memgov_fold`` for the near-spelling (trigram) indexes,
replacing the unfolded indexes of 0011; SQLite's FTS5 tables rebuilt with a tokenizer that
removes diacritics and triggers that index ``ß`` as ``ss`` (memory.fulltext)."""

from typing import Any

from django.db import migrations

from memory import fulltext


def fold(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for statement in (*fulltext.POSTGRESQL_CREATE, *fulltext.POSTGRESQL_DROP_UNFOLDED):
                cursor.execute(statement)
    elif connection.vendor == "sqlite":
        fulltext.refold_sqlite(connection)


def unfold(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for statement in (*fulltext.POSTGRESQL_UNFOLDED, *fulltext.POSTGRESQL_DROP):
                cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("memory", "0012_field_catalog")]

    operations = [migrations.RunPython(fold, unfold)]
