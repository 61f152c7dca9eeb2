"""Small builders for the API tests: record evidence, propose memory, count what was written.

Everything goes through the public API with a persona's key, the way an agent does it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection
from rest_framework.test import APIClient

from audit.models import AuditEvent
from core.models import IdempotencyRecord
from memory.models import Entity, MemoryItem, MemoryVersion, Source
from tests.conftest import iso, later

PROBLEM = "application/problem+json"


def record_source(
    client: APIClient, kind: str = "message", content: str = "Deliver to 12 Elm Street.", **extra
) -> str:
    response = client.post("/api/v1/sources", {"kind": kind, "content": content, **extra}, "json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def look_alike_customers(tenant: Any, count: int) -> None:
    """A CRM's customers, all "Customer 1" … "Customer <count>", written at once."""
    Entity.objects.bulk_create(
        Entity(
            tenant=tenant, kind="customer", name=f"Customer {n}", name_normalized=f"customer {n}"
        )
        for n in range(1, count + 1)
    )


def create_entity(
    client: APIClient, name: str = "Dana Kim", kind: str = "customer", **extra
) -> str:
    response = client.post("/api/v1/entities", {"kind": kind, "name": name, **extra}, "json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def preference_body(subject: str, source: str, **overrides: Any) -> dict[str, Any]:
    """Dana normally wants deliveries at home (seed 002): the simplest valid proposal."""
    body: dict[str, Any] = {
        "kind": "preference",
        "subject": subject,
        "field": "delivery_address",
        "value": "12 Elm Street",
        "statement": "Dana normally wants deliveries at home.",
        "scope": {},
        "owner": "nora",
        "expires_at": None,
        "sources": [source],
    }
    body.update(overrides)
    return body


def task_fact_body(subject: str, record: str, **overrides: Any) -> dict[str, Any]:
    """Order order-a goes to Dana's office (seed 002), backed by the order record."""
    body: dict[str, Any] = {
        "kind": "task_fact",
        "subject": subject,
        "field": "delivery_address",
        "value": "4 Dock Road",
        "statement": "Order order-a goes to Dana's office.",
        "scope": {"task": "order-a"},
        "owner": "rita",
        "expires_at": iso(later(14)),
        "sources": [record],
        "basis": {"ref": "ORD-A", "version": "2"},
    }
    body.update(overrides)
    return body


def rule_body(subject: str, approval: str, **overrides: Any) -> dict[str, Any]:
    """Renewals of project P-9 follow exception APR-2291 (seed 001)."""
    body: dict[str, Any] = {
        "kind": "enterprise_rule",
        "subject": subject,
        "field": "material_checks",
        "value": "follow exception APR-2291",
        "statement": "Renewals of project P-9 with S-17 follow exception APR-2291.",
        "scope": {"project": "P-9", "supplier": "S-17"},
        "owner": "rita",
        "expires_at": iso(later(90)),
        "sources": [approval],
        "basis": {"ref": "APR-2291", "version": "3"},
    }
    body.update(overrides)
    return body


@dataclass(frozen=True)
class Written:
    """Row counts of everything a write could leave behind."""

    items: int
    versions: int
    events: int
    sources: int
    idempotency: int

    @classmethod
    def now(cls) -> Written:
        return cls(
            items=MemoryItem.objects.count(),
            versions=MemoryVersion.objects.count(),
            events=AuditEvent.objects.count(),
            sources=Source.objects.count(),
            idempotency=IdempotencyRecord.objects.count(),
        )


def assert_problem(response: Any, status: int, field: str | None = None) -> dict[str, Any]:
    """An RFC 9457 answer with the contract's members; ``field`` must be named in ``errors``."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == PROBLEM
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["type"].startswith("https://")
    assert body["title"]
    assert body["detail"]
    if field is not None:
        assert field in body["errors"], body
        assert body["errors"][field]
        assert all(isinstance(message, str) and message for message in body["errors"][field])
    return body


def tamper(sql: str, params: list[Any]) -> None:
    """Change audit rows behind the application's back. On PostgreSQL the append-only
    trigger is bypassed first the way only a superuser could (replication role): the chain
    must still show it."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(sql, params)
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = DEFAULT")
