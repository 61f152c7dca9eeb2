"""State only: memory's foreign keys follow ``Tenant`` to ``core`` and the retrieval log
(tables ``audit_retrieval*``, kept) joins ``memory``; no table changes. The old models
leave memory's state in 0008, once nothing points to them any more."""

import django.db.models.deletion
from django.db import migrations, models

import core.ids


def _tenant(**kwargs: object) -> models.ForeignKey:  # type: ignore[type-arg]
    return models.ForeignKey(
        on_delete=django.db.models.deletion.PROTECT, to="core.tenant", **kwargs
    )


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0001_initial"),
        ("memory", "0006_cache_generations_committed_with_changes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField("entity", "tenant", _tenant(related_name="entities")),
                migrations.AlterField("alias", "tenant", _tenant()),
                migrations.AlterField("source", "tenant", _tenant(related_name="sources")),
                migrations.AlterField("memoryitem", "tenant", _tenant(related_name="memory_items")),
                migrations.AlterField("memoryversion", "tenant", _tenant(related_name="+")),
                migrations.AlterField("policy", "tenant", _tenant(related_name="policies")),
                migrations.AlterField("taskflag", "tenant", _tenant()),
                migrations.CreateModel(
                    name="RetrievalRecord",
                    fields=[
                        (
                            "id",
                            models.CharField(
                                default=core.ids.new_retrieval_id,
                                editable=False,
                                max_length=40,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        ("task_id", models.CharField(max_length=200)),
                        ("principal", models.CharField(max_length=150)),
                        ("policy_version", models.CharField(max_length=20)),
                        ("context", models.JSONField(default=dict)),
                        ("retrieved_at", models.DateTimeField()),
                        ("tenant", _tenant()),
                    ],
                    options={
                        "db_table": "audit_retrievalrecord",
                        "indexes": [
                            models.Index(fields=["tenant", "task_id"], name="retrieval_task")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="RetrievalUse",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("task_id", models.CharField(max_length=200)),
                        ("version_number", models.PositiveIntegerField()),
                        ("field", models.CharField(max_length=100)),
                        (
                            "item",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                to="memory.memoryitem",
                            ),
                        ),
                        (
                            "retrieval",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="uses",
                                to="memory.retrievalrecord",
                            ),
                        ),
                        ("tenant", _tenant()),
                    ],
                    options={
                        "db_table": "audit_retrievaluse",
                        "indexes": [
                            models.Index(fields=["tenant", "item"], name="retrievaluse_item")
                        ],
                    },
                ),
            ],
        )
    ]
