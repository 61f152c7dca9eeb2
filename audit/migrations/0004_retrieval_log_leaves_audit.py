"""State only: the retrieval log now lives in ``memory`` (memory 0007, same tables) and
the chain's foreign keys follow ``Tenant`` to ``core``. No table changes."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0001_initial"),
        ("memory", "0007_point_to_core_and_adopt_retrieval_log"),
        ("audit", "0003_audit_refuses_truncate"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    "auditchainhead",
                    "tenant",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.PROTECT,
                        primary_key=True,
                        serialize=False,
                        to="core.tenant",
                    ),
                ),
                migrations.AlterField(
                    "auditevent",
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="audit_events",
                        to="core.tenant",
                    ),
                ),
                migrations.DeleteModel("RetrievalUse"),
                migrations.DeleteModel("RetrievalRecord"),
            ],
        )
    ]
