"""Shared fixtures: a tenant with personas (healthchecks' Alice/Bob style), API clients.

Personas: ``rita`` reviews everything in the tenant; ``omar`` reviews project P-9 only;
``lena`` is a second rule approver; ``nora`` has no grants; ``zed`` belongs to another
tenant. ``agent`` is an agent key. Real services create everything (audit included)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.dispatch import receiver
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import tenancy
from accounts.grants import grant_from_text, permissions_grant
from config.celery import app as celery_app
from core.models import Tenant
from core.principals import Principal
from memory import embeddings

RESTRICTED_LABELS = ["finance", "hr", "legal", "support", "x"]

# Files that keep one process busy for a minute or more (``make test``'s durations): run
# first, so a parallel run does not end with one process finishing one of them alone.
LONGEST_FIRST = (
    "tests/canary/test_canary_read_surfaces.py",
    "tests/approvals/test_authorization_matrix.py",
    "tests/semantic/test_semantic_on_sqlite.py",
    "tests/api/test_strict_query_strings.py",
    "tests/deploy/test_worker_liveness.py",
    "tests/unit/test_resolver_properties.py",
    "tests/mcp/test_live_transports.py",
    "tests/deploy/test_worker_redis_outage.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``LONGEST_FIRST`` first (a stable sort: the rest keep their order)."""
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in LONGEST_FIRST)


ALL_PERMISSIONS = [
    "review_task_fact",
    "review_enterprise_rule",
    "approve_tenant_wide_rule",
    "retire_memory",
    "manage_policy",
    "view_audit",
]


def needs(service: str) -> pytest.MarkDecorator:
    """Skip locally without the service; under CI=true a missing service fails the test."""
    present = {
        "postgres": settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
        "redis": bool(settings.CACHE_URL),
    }[service]
    if os.environ.get("CI") == "true":
        mark: pytest.MarkDecorator = getattr(pytest.mark, service)
        return mark
    return pytest.mark.skipif(not present, reason=f"needs {service} (set DATABASE_URL/REDIS_URL)")


def child_processes(pid: int) -> list[int]:
    """The processes ``pid`` started (a server's workers, a worker's pool), from /proc."""
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


@receiver(connection_created)
def _allow_flushing_the_audit_tables(connection: BaseDatabaseWrapper, **_: Any) -> None:
    """Django empties the database between ``transaction=True`` tests with TRUNCATE, which
    the audit tables refuse (audit migration 0003) unless the session says otherwise. Only
    the test harness says so; tests of the refusal switch it off for their transaction."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET memgov.allow_truncate = 'on'")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    """PBKDF2's deliberate slowness costs seconds per persona; tests need no such cost."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _eager_celery() -> Iterator[None]:
    """Tasks run in-process unless a test starts a real worker (see tests/integration)."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


@dataclass
class World:
    tenant: Tenant
    other_tenant: Tenant
    users: dict[str, User]
    keys: dict[str, str]

    def principal(self, name: str) -> Principal:
        if name == "agent":
            return Principal(tenant=self.tenant, name="agent:bot", labels=frozenset({"staff"}))
        user = self.users[name]
        tenant = self.other_tenant if name == "zed" else self.tenant
        return Principal(tenant=tenant, name=f"user:{name}", labels=frozenset({"staff"}), user=user)

    def client(self, name: str) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.keys[name]}")
        return client


def _user(tenant: Tenant, name: str, grants: list[str]) -> User:
    user = tenancy.user_create(
        tenant=tenant,
        username=name,
        password=f"{name}-pass-123",
        email=f"{name}@example.com",
        labels=["staff"],
    )
    permissions_grant(user=user, tenant=tenant, grants=[grant_from_text(g) for g in grants])
    return user


@pytest.fixture
def world(db: Any) -> World:
    tenant = tenancy.tenant_create(slug="acme", name="Acme")
    Tenant.objects.filter(pk=tenant.pk).update(approvals_required=2)
    tenant.refresh_from_db()
    other = tenancy.tenant_create(slug="globex", name="Globex")
    users = {
        "rita": _user(tenant, "rita", ALL_PERMISSIONS),
        "lena": _user(tenant, "lena", ["review_enterprise_rule", "approve_tenant_wide_rule"]),
        "omar": _user(
            tenant,
            "omar",
            [
                "review_task_fact@project=P-9",
                "review_enterprise_rule@project=P-9",
                "retire_memory@project=P-9",
            ],
        ),
        "nora": _user(tenant, "nora", []),
        "zed": _user(other, "zed", ALL_PERMISSIONS),
    }
    keys = {"agent": tenancy.api_key_create(tenant=tenant, agent_name="bot", labels=["staff"])[1]}
    # The tenant's records system holds the restricted labels the stories use: a label no
    # person, key or source holds is refused (issue 42), and some reader must exist.
    tenancy.api_key_create(tenant=tenant, agent_name="records", labels=RESTRICTED_LABELS)
    for name, user in users.items():
        owner_tenant = other if name == "zed" else tenant
        keys[name] = tenancy.api_key_create(tenant=owner_tenant, user=user, labels=["staff"])[1]
    return World(tenant=tenant, other_tenant=other, users=users, keys=keys)


def later(days: int = 30) -> datetime:
    return timezone.now() + timedelta(days=days)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


@pytest.fixture(autouse=True)
def _responses_match_the_schema(settings: Any) -> None:
    """Every API answer of every test is checked against the published OpenAPI schema."""
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "tests.openapi_check.ResponseSchemaMiddleware"]
    # Each test client loads the middleware again, and WhiteNoise's first reads every
    # static file: a fifth of an API test's time. Looked up when asked for instead (no
    # test here asks the application for one; live servers serve them themselves).
    settings.WHITENOISE_AUTOREFRESH = True


@pytest.fixture
def semantic_on(settings: Any) -> Iterator[None]:
    """Search and matching read by meaning (tests/environment.py turns it off elsewhere:
    every process would load the model)."""
    settings.MEMGOV_SEMANTIC = True
    embeddings.configured.cache_clear()
    yield
    embeddings.configured.cache_clear()
