"""Expand: the columns of a chain keyed outside the database (docs/decisions/0019).

Database defaults, so the previous release's code, running beside this one during the
rollout, still inserts heads and events (plain ones, which verify as before)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("audit", "0004_retrieval_log_leaves_audit")]

    operations = [
        migrations.AddField(
            model_name="auditchainhead",
            name="keyed_from",
            field=models.PositiveBigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="auditchainhead",
            name="seal",
            field=models.CharField(blank=True, db_default="", max_length=64),
        ),
        migrations.AddField(
            model_name="auditchainhead",
            name="seal_key_id",
            field=models.CharField(blank=True, db_default="", max_length=40),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="key_id",
            field=models.CharField(blank=True, db_default="", max_length=40),
        ),
    ]
