"""State only: the models now in ``core`` leave memory's state. Runs after approvals 0003
and audit 0004 repointed their foreign keys, so no state model points to them; the
tables stay (``core`` names them with ``db_table``)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0007_point_to_core_and_adopt_retrieval_log"),
        ("approvals", "0003_tenant_models_leave_approvals"),
        ("audit", "0004_retrieval_log_leaves_audit"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel("Membership"),
                migrations.DeleteModel("ApiKey"),
                migrations.DeleteModel("IdempotencyRecord"),
                migrations.DeleteModel("CacheGeneration"),
                migrations.DeleteModel("ScopeValue"),
                migrations.DeleteModel("Tenant"),
            ],
        )
    ]
