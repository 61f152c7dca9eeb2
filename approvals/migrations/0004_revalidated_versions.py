"""Each revalidation job counts its own versions (RevalidatedVersion). A job still running
at upgrade keeps what it counted before: its versions with a revalidation result since it
started, the bookkeeping it used until now."""

import django.db.models.deletion
from django.db import migrations, models


def counted_so_far(apps, schema_editor):
    Revalidation = apps.get_model("approvals", "Revalidation")
    CheckResult = apps.get_model("approvals", "CheckResult")
    RevalidatedVersion = apps.get_model("approvals", "RevalidatedVersion")
    for job in Revalidation.objects.filter(status="running").iterator():
        checked = CheckResult.objects.filter(
            version_id__in=job.version_ids, run="revalidation", ran_at__gte=job.started_at
        )
        RevalidatedVersion.objects.bulk_create(
            [
                RevalidatedVersion(job_id=job.pk, version_id=version_id)
                for version_id in set(checked.values_list("version_id", flat=True))
            ],
            batch_size=1000,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0003_tenant_models_leave_approvals"),
        ("memory", "0012_field_catalog"),
    ]

    operations = [
        migrations.CreateModel(
            name="RevalidatedVersion",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "job",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="counted",
                        to="approvals.revalidation",
                    ),
                ),
                (
                    "version",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="memory.memoryversion",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("job", "version"), name="revalidated_once_per_job"
                    )
                ],
            },
        ),
        migrations.RunPython(counted_so_far, migrations.RunPython.noop),
    ]
