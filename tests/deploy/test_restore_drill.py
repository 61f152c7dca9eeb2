"""The restore drill of docs/operations.md (Backup and point-in-time restore), with the real
tools: ``pg_dump -Fc`` of the database, a change after the backup, ``pg_restore`` into
a fresh database, the cache's Redis database flushed (the broker's left alone), and
``verify_audit`` run against the restored database by a process of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
import redis
from django.conf import settings
from psycopg import sql

from accounts import tenancy
from audit.models import AuditEvent
from core.models import Tenant
from tests.conftest import World, needs
from tests.deploy.support import ROOT
from tests.integration.test_workflow_worker import _test_database_url

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI") == "true":
            raise AssertionError(f"{name} is needed for the restore drill")
        pytest.skip(f"no {name} here")
    return path


@pytest.fixture
def restored_url() -> Iterator[str]:
    """A database URL beside the test database's, dropped afterwards."""
    source = urlsplit(_test_database_url())
    name = f"{source.path.strip('/')}_restored"
    admin = source._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield source._replace(path=f"/{name}").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_restore_drill_ends_with_an_intact_audit_chain_and_no_stale_cache(
    world: World, restored_url: str, tmp_path: Path
):
    dump = tmp_path / "memgov.pgdump"
    subprocess.run(  # noqa: S603 - PostgreSQL's own tool on the test database
        [_tool("pg_dump"), "-Fc", "-f", str(dump), _test_database_url()], check=True
    )
    # After the backup: a tenant made (and audited), and a cached answer about it.
    tenancy.tenant_create(slug="after-backup", name="After the backup")
    audited_at_backup = AuditEvent.objects.count() - 1
    cache = redis.Redis.from_url(str(settings.CACHE_URL))
    broker = redis.Redis.from_url(str(settings.CELERY_BROKER_URL))
    cache.set("memgov:drill:answer", "about after-backup")
    broker.set("memgov:drill:queued", "a task")

    subprocess.run(  # noqa: S603
        [_tool("pg_restore"), "--no-owner", "-d", restored_url, str(dump)], check=True
    )
    cache.flushdb()  # step 3: the cache's database only
    verified = subprocess.run(
        [sys.executable, "manage.py", "verify_audit"],
        cwd=ROOT,
        # The audit chain is keyed outside the database: the restore verifies with the
        # keys it was written with (here derived from this process's SECRET_KEY).
        env={**os.environ, "DATABASE_URL": restored_url, "SECRET_KEY": settings.SECRET_KEY},
        capture_output=True,
        text=True,
    )

    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "acme: ok" in verified.stdout
    with psycopg.connect(restored_url) as conn:
        tenants, audit = (sql.Identifier(m._meta.db_table) for m in (Tenant, AuditEvent))
        slugs = {row[0] for row in conn.execute(sql.SQL("SELECT slug FROM {}").format(tenants))}
        events = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(audit)).fetchone()
    assert "after-backup" not in slugs and "acme" in slugs  # the restore took it back
    assert events is not None and events[0] == audited_at_backup
    assert cache.get("memgov:drill:answer") is None
    assert broker.get("memgov:drill:queued") == b"a task"
    broker.delete("memgov:drill:queued")
