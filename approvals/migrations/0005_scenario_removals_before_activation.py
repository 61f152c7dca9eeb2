"""A custom scenario can be removed before activation, by whom and why (issue 43); the
scenario row stays, and the checks stop asking it."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0004_revalidated_versions"),
        ("memory", "0012_field_catalog"),
    ]

    operations = [
        migrations.CreateModel(
            name="ScenarioRemoval",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("removed_by", models.CharField(max_length=150)),
                ("reason", models.TextField()),
                ("removed_at", models.DateTimeField()),
                (
                    "scenario",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="removal",
                        to="memory.scenario",
                    ),
                ),
            ],
        ),
    ]
