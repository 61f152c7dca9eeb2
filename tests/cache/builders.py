"""Dana Kim's delivery address (seed 002) as memory, built through the services: a
preference needs no reviewer, so proposing it runs its gate checks and activates it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from approvals.services import version_approve
from core.principals import Principal
from memory import entities, proposals, sources
from memory.models import MemoryItem, MemoryVersion, Status
from memory.resolution import ResolveRequest
from tests.conftest import World


def dana(world: World) -> str:
    return entities.entity_create(
        principal=world.principal("agent"), kind="customer", name="Dana Kim"
    ).pk


def message(world: World, content: str, visibility: list[str] | None = None) -> str:
    data = {"kind": "message", "content": content, "visibility": visibility or ["*"]}
    return sources.source_record(principal=world.principal("agent"), data=data).pk


def propose_address(
    world: World,
    subject: str,
    value: str = "12 Elm Street",
    *,
    source: str | None = None,
    expires_at: datetime | None = None,
    by: Principal | None = None,
) -> MemoryVersion:
    """A preference; the caller makes on-commit work run (a transactional test, or
    ``django_capture_on_commit_callbacks(execute=True)``) and so activates it."""
    return proposals.memory_propose(
        principal=by or world.principal("agent"),
        data={
            "kind": "preference",
            "subject": subject,
            "field": "delivery_address",
            "value": value,
            "statement": f"Dana wants deliveries at {value}.",
            "scope": {},
            "owner": "nora",
            "expires_at": expires_at,
            "sources": [source or message(world, f"Deliver to {value}.")],
        },
    )


def propose_office_delivery(
    world: World, subject: str, value: str = "4 Dock Road", *, expires_at: datetime
) -> MemoryVersion:
    """Order order-a goes to Dana's office: a task fact, backed by the order record, that
    waits for one reviewer."""
    record = sources.source_record(
        principal=world.principal("agent"),
        data={"kind": "business_record", "content": f"ORD-A ships to {value}."},
    ).pk
    return proposals.memory_propose(
        principal=world.principal("agent"),
        data={
            "kind": "task_fact",
            "subject": subject,
            "field": "delivery_address",
            "value": value,
            "statement": f"Order order-a goes to {value}.",
            "scope": {"task": "order-a"},
            "owner": "rita",
            "expires_at": expires_at,
            "sources": [record],
        },
    )


def approve(world: World, version: MemoryVersion) -> None:
    """Rita approves; the caller makes the on-commit gate run."""
    item = MemoryItem.objects.get(pk=version.item_id)
    version_approve(principal=world.principal("rita"), item=item, comment="matches ORD-A")


def status_of(version: MemoryVersion) -> str:
    return str(MemoryVersion.objects.get(pk=version.pk).status)


def assert_active(version: MemoryVersion) -> None:
    assert status_of(version) == Status.ACTIVE, MemoryVersion.objects.get(pk=version.pk)


def now_request(subject: str, **overrides: Any) -> ResolveRequest:
    fields: dict[str, Any] = {
        "subject": subject,
        "context": {},
        "fields": None,
        "valid_at": None,
        "known_at": None,
        "task_id": None,
        "explain": False,
    }
    fields.update(overrides)
    return ResolveRequest(**fields)


def addresses(answer: dict[str, Any]) -> list[Any]:
    return [f["value"] for f in answer["facts"] if f["field"] == "delivery_address"]
