"""A database migrated by the previous main (before the models moved to ``core``) upgrades
in place: its tenant, person, API key, guardian grants, audit event and retrieval record
are all there afterwards through the new models, and the grants still count.

The test works in a scratch PostgreSQL database of its own on the server of
``DATABASE_URL``; migrations run in subprocesses (``manage.py``), exactly as an operator
would run them, and the old rows are written with SQL against the old tables, because
today's code no longer has the old models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from accounts.keys import hash_key
from tests.conftest import needs

pytestmark = needs("postgres")

ROOT = Path(__file__).resolve().parents[2]
# The leaf migrations as they were before the move; everything Django ships, as well.
BEFORE_THE_MOVE = [
    ("contenttypes", None),
    ("auth", None),
    ("admin", None),
    ("sessions", None),
    ("guardian", None),
    ("memory", "0006_cache_generations_committed_with_changes"),
    ("approvals", "0002_outbox_and_revalidation_progress"),
    ("audit", "0003_audit_refuses_truncate"),
]
RAW_KEY = "mg_0123456789ab_an-api-key-made-before-the-upgrade"


def _server(dbname: str) -> dict[str, Any]:
    db = settings.DATABASES["default"]
    return {
        "host": db["HOST"] or None,
        "port": db["PORT"] or None,
        "user": db["USER"] or None,
        "password": db["PASSWORD"] or None,
        "dbname": dbname,
    }


@pytest.fixture
def scratch() -> Iterator[str]:
    """A fresh database on the test server; its name. Dropped afterwards."""
    name = f"{settings.DATABASES['default']['NAME']}_upgrade_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(**_server("postgres"), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(**_server("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _manage(database: str, *args: str) -> str:
    server = _server(database)
    auth = server["user"] or "postgres"
    if server["password"]:
        auth += f":{server['password']}"
    url = f"postgres://{auth}@{server['host'] or 'localhost'}:{server['port'] or 5432}/{database}"
    env = {**os.environ, "DATABASE_URL": url, "SECRET_KEY": os.environ.get("SECRET_KEY", "x")}
    done = subprocess.run(  # noqa: S603 - our own manage.py with fixed arguments
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _migrate_to_before_the_move(database: str) -> None:
    for app, target in BEFORE_THE_MOVE:
        _manage(database, "migrate", "--no-input", app, *([target] if target else []))


def _write_old_rows(database: str) -> None:
    """What a running installation of the previous main holds, in its tables."""
    with psycopg.connect(**_server(database), autocommit=True) as db:

        def one(sql: str, *params: Any) -> Any:
            row = db.execute(sql, params).fetchone()
            assert row is not None
            return row[0]

        def permission(model: str, codename: str) -> int:
            return int(
                one(
                    "SELECT p.id FROM auth_permission p JOIN django_content_type t"
                    " ON t.id = p.content_type_id"
                    " WHERE t.app_label = 'memory' AND t.model = %s AND p.codename = %s",
                    model,
                    codename,
                )
            )

        tenant = one(
            "INSERT INTO memory_tenant (slug, name, approvals_required, revalidation_failure,"
            " created_at) VALUES ('acme', 'Acme', 2, 'suspend', now()) RETURNING id"
        )
        omar = one(
            "INSERT INTO auth_user (username, password, is_superuser, first_name, last_name,"
            " email, is_staff, is_active, date_joined)"
            " VALUES ('omar', '!', false, '', '', 'omar@example.com', false, true, now())"
            " RETURNING id"
        )
        db.execute(
            "INSERT INTO memory_membership (user_id, tenant_id, labels)"
            " VALUES (%s, %s, '[\"staff\"]')",
            (omar, tenant),
        )
        project = one(
            "INSERT INTO memory_scopevalue (tenant_id, dimension, value)"
            " VALUES (%s, 'project', 'P-9') RETURNING id",
            tenant,
        )
        db.execute(
            "INSERT INTO approvals_tenantuserobjectpermission"
            " (permission_id, user_id, content_object_id) VALUES (%s, %s, %s)",
            (permission("tenant", "review_task_fact"), omar, tenant),
        )
        db.execute(
            "INSERT INTO approvals_scopevalueuserobjectpermission"
            " (permission_id, user_id, content_object_id) VALUES (%s, %s, %s)",
            (permission("scopevalue", "retire_memory"), omar, project),
        )
        db.execute(
            "INSERT INTO memory_apikey (tenant_id, prefix, key_hash, principal, agent_name,"
            " user_id, labels, created_at) VALUES (%s, '0123456789ab', %s, 'user', '', %s,"
            " '[\"staff\"]', now())",
            (tenant, hash_key(RAW_KEY), omar),
        )
        db.execute(
            "INSERT INTO audit_auditevent (tenant_id, seq, at, actor, action, target_type,"
            " target_id, data, prev_hash, hash) VALUES (%s, 1, now(), 'operator',"
            " 'tenant.created', 'tenant', 'acme', '{}', %s, %s)",
            (tenant, "0" * 64, "a" * 64),
        )
        db.execute(
            "INSERT INTO audit_retrievalrecord (id, tenant_id, task_id, principal,"
            " policy_version, context, retrieved_at) VALUES ('rtv_before', %s, 'task-7',"
            " 'agent:bot', '1', '{}', now())",
            (tenant,),
        )


# Run after the upgrade with today's code: every old row through the new models, and
# the grants through the one authority module.
READ_BACK = """
import json
from core.authority import Authority
from core.models import ApiKey, ScopeValue, Tenant, TenantUserObjectPermission
from audit.models import AuditEvent
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from accounts.keys import api_key_for_raw
from memory.models import RetrievalRecord
from core.principals import principal_for_user

tenant = Tenant.objects.get(slug="acme")
omar = User.objects.get(username="omar")
authority = Authority.load(principal_for_user(omar))
key = api_key_for_raw("RAW_KEY")
print(json.dumps({
    "tenant": [tenant.name, tenant.memberships.get().user.username],
    "key": key.principal_name if key else None,
    "scope_values": list(ScopeValue.objects.values_list("dimension", "value")),
    "reviews_task_facts": authority.has("review_task_fact"),
    "manages_policy": authority.has("manage_policy"),
    "retires_in_p9": authority.holds("retire_memory", {"project": "P-9"}),
    "retires_in_p10": authority.holds("retire_memory", {"project": "P-10"}),
    "guardian": omar.has_perm("core.review_task_fact", tenant),
    "grant_codename": TenantUserObjectPermission.objects.get().permission.natural_key()[:2],
    "audit": list(AuditEvent.objects.values_list("action", "tenant__slug")),
    "retrievals": list(RetrievalRecord.objects.values_list("id", "task_id", "tenant__slug")),
    "old_content_types": sum(
        ContentType.objects.filter(app_label=app, model=model).count()
        for app, model in [("memory", "tenant"), ("memory", "scopevalue"), ("memory", "apikey"),
                           ("approvals", "tenantuserobjectpermission"), ("approvals", "outbox"),
                           ("audit", "retrievalrecord")]
    ),
}))
""".replace("RAW_KEY", RAW_KEY)


def _content_type_of_tenant(database: str) -> list[tuple[str, str]]:
    with psycopg.connect(**_server(database)) as db:
        rows = db.execute(
            "SELECT app_label, model FROM django_content_type WHERE model = 'tenant'"
        ).fetchall()
    return [(str(app), str(model)) for app, model in rows]


def _app_of_the_tenant_grant(database: str) -> str:
    """Under which app the permission of omar's tenant grant is named."""
    with psycopg.connect(**_server(database)) as db:
        row = db.execute(
            "SELECT t.app_label FROM approvals_tenantuserobjectpermission g"
            " JOIN auth_permission p ON p.id = g.permission_id"
            " JOIN django_content_type t ON t.id = p.content_type_id"
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_a_database_of_the_previous_main_upgrades_with_its_rows_and_grants(
    scratch: str,
) -> None:
    assert connection.vendor == "postgresql"
    _migrate_to_before_the_move(scratch)
    _write_old_rows(scratch)
    assert _content_type_of_tenant(scratch) == [("memory", "tenant")]

    _manage(scratch, "migrate", "--no-input")

    answer = json.loads(_manage(scratch, "shell", "-c", READ_BACK).splitlines()[-1])
    assert answer == {
        "tenant": ["Acme", "omar"],
        "key": "user:omar",
        "scope_values": [["project", "P-9"]],
        "reviews_task_facts": True,
        "manages_policy": False,
        "retires_in_p9": True,
        "retires_in_p10": False,
        "guardian": True,
        "grant_codename": ["review_task_fact", "core"],
        "audit": [["tenant.created", "acme"]],
        "retrievals": [["rtv_before", "task-7", "acme"]],
        "old_content_types": 0,
    }
    assert _content_type_of_tenant(scratch) == [("core", "tenant")]
    assert _app_of_the_tenant_grant(scratch) == "core"
    assert "No changes detected" in _manage(scratch, "makemigrations", "--check", "--dry-run")

    # And back: unapplying the move gives the content types their old names.
    _manage(scratch, "migrate", "--no-input", "memory", "0006")
    assert _app_of_the_tenant_grant(scratch) == "memory"


def test_a_fresh_database_migrates_and_names_the_moved_models_under_core(scratch: str) -> None:
    _manage(scratch, "migrate", "--no-input")

    assert _content_type_of_tenant(scratch) == [("core", "tenant")]
    with psycopg.connect(**_server(scratch)) as db:
        tables = {
            row[0]
            for row in db.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        }
    assert {
        "memory_tenant",
        "memory_apikey",
        "approvals_tenantuserobjectpermission",
        "approvals_outbox",
        "audit_retrievalrecord",
        "audit_retrievaluse",
    } <= tables
    # The moved models keep their tables; only a model born in core has a core_ table.
    assert {table for table in tables if table.startswith("core_")} == {"core_deployment"}
