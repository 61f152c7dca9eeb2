"""Discovery (issue 35): full-text indexes over entities, aliases, versions and sources
(memory.fulltext: GIN + pg_trgm on PostgreSQL, FTS5 on SQLite), the external-ref index an
agent matches subjects by, and the entities a version's value references."""

import django.db.models.deletion
from django.db import migrations, models

from memory import fulltext


def create_indexes(apps, schema_editor):
    fulltext.create(schema_editor.connection)


def drop_indexes(apps, schema_editor):
    fulltext.drop(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0007_deployment_id"),
        ("memory", "0010_erasure"),
    ]

    operations = [
        migrations.CreateModel(
            name="EntityReference",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("path", models.CharField(blank=True, max_length=200)),
                (
                    "entity",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="references",
                        to="memory.entity",
                    ),
                ),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="core.tenant",
                    ),
                ),
                (
                    "version",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="entity_references",
                        to="memory.memoryversion",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["tenant", "entity"], name="entityreference_entity")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("version", "entity", "path"), name="entityreference_unique"
                    )
                ],
            },
        ),
        migrations.AddIndex(
            model_name="entity",
            index=models.Index(
                fields=["tenant", "external_ref"], name="entity_tenant_external_ref"
            ),
        ),
        migrations.RunPython(create_indexes, drop_indexes),
    ]
