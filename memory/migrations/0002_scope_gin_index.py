"""A GIN index on the scope of versions (PostgreSQL) for ``scope @> {dim: value}``: listing
memories by ``scope.<dim>=<value>`` is answered from it instead of a scan of the tenant."""

from django.db import migrations

CREATE = (
    "CREATE INDEX IF NOT EXISTS version_scope_gin ON memory_memoryversion "
    "USING gin (scope jsonb_path_ops)"
)
DROP = "DROP INDEX IF EXISTS version_scope_gin"


def _on_postgresql(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]

    operations = [migrations.RunPython(_on_postgresql(CREATE), _on_postgresql(DROP))]
