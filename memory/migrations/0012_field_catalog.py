"""The field catalog (value schema, kinds, scope, default expiry, authoritative system)
and the clarification questions a held proposal asks (issue 35)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0007_deployment_id"),
        ("memory", "0011_search"),
    ]

    operations = [
        migrations.CreateModel(
            name="FieldDefinition",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100)),
                ("description", models.TextField(blank=True)),
                ("value_schema", models.JSONField(blank=True, default=dict)),
                (
                    "kinds",
                    models.JSONField(blank=True, default=list, help_text="Empty: every kind."),
                ),
                ("required_scope", models.JSONField(blank=True, default=list)),
                ("default_expiry_days", models.PositiveIntegerField(blank=True, null=True)),
                ("authority_name", models.CharField(blank=True, max_length=200)),
                ("authority_url", models.CharField(blank=True, max_length=2000)),
                ("authority_tool", models.CharField(blank=True, max_length=200)),
                ("updated_by", models.CharField(max_length=150)),
                ("updated_at", models.DateTimeField()),
                (
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="core.tenant",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tenant", "name"), name="field_unique_per_tenant"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="Clarification",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "member",
                    models.CharField(
                        choices=[("subject", "Subject"), ("value", "Value")], max_length=10
                    ),
                ),
                ("mention", models.CharField(max_length=200)),
                ("question", models.TextField()),
                ("options", models.JSONField(default=list)),
                ("asked_at", models.DateTimeField()),
                ("answered_at", models.DateTimeField(blank=True, null=True)),
                ("answered_by", models.CharField(blank=True, max_length=150)),
                ("choice", models.CharField(blank=True, max_length=40)),
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
                        related_name="clarifications",
                        to="memory.memoryversion",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("version", "member"), name="clarification_one_per_member"
                    )
                ],
            },
        ),
    ]
