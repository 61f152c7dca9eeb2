"""The demo tenant, as ``make run`` loads it, for dashboard tests.

``load_demo`` runs through the real services; its after-commit work (preview checks,
preference gate checks, reviewer emails) runs eagerly, so the pages show what a
first-time reviewer sees after ``make run``: three items waiting for review with their
preview checks, the preferences active."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client

from accounts import tenancy
from accounts.grants import permission_grant
from core.models import Tenant
from core.principals import Principal, principal_for_user
from memory import proposals
from memory.models import MemoryItem, MemoryVersion

DEMO_PASSWORD = "{}-demo-pass"


@dataclass
class Demo:
    tenant: Tenant
    users: dict[str, User]
    items: dict[str, str] = field(default_factory=dict)

    def principal(self, name: str) -> Principal:
        principal = principal_for_user(self.users[name])
        assert principal is not None
        return principal

    def agent(self) -> Principal:
        return Principal(tenant=self.tenant, name="agent:assistant", labels=frozenset({"staff"}))

    def client(self, name: str, *, enforce_csrf_checks: bool = False) -> Client:
        client = Client(enforce_csrf_checks=enforce_csrf_checks)
        client.force_login(self.users[name])
        return client

    def item(self, key: str) -> MemoryItem:
        return MemoryItem.objects.get(pk=self.items[key])

    def order_a_fact(self, field: str, value: Any, statement: str) -> MemoryVersion:
        """Another fact of order-a (its subject, scope, evidence and expiry), proposed by
        the agent: a task fact, so it waits for review."""
        order = self.item("order_a").versions.get()
        return proposals.memory_propose(
            principal=self.agent(),
            data={
                "kind": "task_fact",
                "subject": order.subject_id,
                "field": field,
                "value": value,
                "statement": statement,
                "scope": order.scope,
                "owner": "sam",
                "expires_at": order.expires_at,
                "sources": order.source_ids,
                "basis": order.basis,
            },
        )


def _key(item: MemoryItem) -> str:
    version = item.versions.get(number=item.head_version)
    scope = version.scope
    if version.kind == "task_fact":
        return "order_a"
    if version.kind == "enterprise_rule":
        return "tenant_rule" if scope == {"tenant": "*"} else "p9_rule"
    return {
        ("delivery_address", "12 Elm Street"): "dana_home",
        ("home_city", "Mumbai"): "sarah_mumbai",
        ("home_city", "Pune"): "sarah_pune",
        ("employer", "Nova"): "sarah_nova",
    }[(version.field, str(version.value))]


def demo_year(demo: Demo) -> int:
    """The year of "I moved to Pune in March" in the demo (it depends on today's date)."""
    moved = demo.item("sarah_pune").versions.get().valid_from
    assert moved is not None
    return moved.year


def load_demo(on_commit: Any) -> Demo:
    with on_commit(execute=True):
        call_command("load_demo", stdout=io.StringIO())
    tenant = Tenant.objects.get(slug="demo")
    users = {u.username: u for u in User.objects.filter(membership__tenant=tenant)}
    demo = Demo(tenant=tenant, users=users)
    demo.items = {_key(item): item.pk for item in MemoryItem.objects.filter(tenant=tenant)}
    return demo


def outsider(on_commit: Any) -> User:
    """zed reviews everything, in another tenant."""
    with on_commit(execute=True):
        other = tenancy.tenant_create(slug="globex", name="Globex")
        zed = tenancy.user_create(
            tenant=other, username="zed", password="zed-pass-123", labels=["staff"]
        )
        for perm in ("review_task_fact", "review_enterprise_rule", "view_audit", "retire_memory"):
            permission_grant(user=zed, tenant=other, codename=perm)
    return zed
