"""State only: the guardian permission models and the outbox now live in ``core`` (same
tables); approvals' own foreign keys follow ``Tenant`` there. No table changes."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0001_initial"),
        ("approvals", "0002_outbox_and_revalidation_progress"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    "revalidation",
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT, to="core.tenant"
                    ),
                ),
                migrations.AlterField(
                    "notification",
                    "tenant",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT, to="core.tenant"
                    ),
                ),
                migrations.DeleteModel("TenantUserObjectPermission"),
                migrations.DeleteModel("TenantGroupObjectPermission"),
                migrations.DeleteModel("ScopeValueUserObjectPermission"),
                migrations.DeleteModel("ScopeValueGroupObjectPermission"),
                migrations.DeleteModel("Outbox"),
            ],
        )
    ]
