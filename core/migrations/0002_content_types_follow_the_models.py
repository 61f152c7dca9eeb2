"""Rename the content types of the moved models (``memory.tenant`` → ``core.tenant``, …).

Permissions hang on content types, and guardian's grants on permissions, so renaming the
rows (not creating new ones) keeps every existing grant: ``core.review_task_fact`` is the
very permission that was ``memory.review_task_fact``. On a fresh database there are no
rows yet (``post_migrate`` creates them under the new names) and this does nothing."""

from django.apps.registry import Apps
from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor

MOVES = [
    *[
        ("memory", "core", model)
        for model in (
            "tenant",
            "membership",
            "apikey",
            "scopevalue",
            "idempotencyrecord",
            "cachegeneration",
        )
    ],
    *[
        ("approvals", "core", model)
        for model in (
            "tenantuserobjectpermission",
            "tenantgroupobjectpermission",
            "scopevalueuserobjectpermission",
            "scopevaluegroupobjectpermission",
            "outbox",
        )
    ],
    ("audit", "memory", "retrievalrecord"),
    ("audit", "memory", "retrievaluse"),
]


def _rename(apps: Apps, moves: list[tuple[str, str, str]], using: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType").objects.db_manager(using)
    for old_app, new_app, model in moves:
        old = content_types.filter(app_label=old_app, model=model).first()
        if old is None:
            continue
        # A ``post_migrate`` run between core 0001 and here may have made an empty twin
        # under the new name; the old row carries the grants, so it wins.
        content_types.filter(app_label=new_app, model=model).delete()
        old.app_label = new_app
        old.save(update_fields=["app_label"])
    content_types.clear_cache()


def forwards(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _rename(apps, MOVES, schema_editor.connection.alias)


def backwards(apps: Apps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    _rename(apps, [(new, old, model) for old, new, model in MOVES], schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("core", "0001_initial"),
        ("memory", "0008_tenant_models_leave_memory"),
        ("approvals", "0003_tenant_models_leave_approvals"),
        ("audit", "0004_retrieval_log_leaves_audit"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
