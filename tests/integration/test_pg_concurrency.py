"""Races on real PostgreSQL with real commits: two writers correcting one head (seed 002:
a stale summary must not overwrite a correction) and concurrent audit appends (the chain
must never fork). Threads start together at a barrier; each uses its own connection."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from django.db import connection, transaction

from audit.models import AuditChainHead, AuditEvent
from audit.selectors import audit_verify
from audit.services import audit_append
from core.models import Tenant
from memory.models import MemoryItem, MemoryVersion
from tests.conftest import World, iso, later, needs

pytestmark = [needs("postgres"), pytest.mark.django_db(transaction=True)]


def together(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run every job in its own thread, released at once; return results in job order."""
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)
    errors: list[BaseException] = []

    def run(index: int, job: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = job()
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, job)) for i, job in enumerate(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    return results


def _order_a_fact(world: World) -> str:
    agent = world.client("agent")
    dana = agent.post("/api/v1/entities", {"kind": "customer", "name": "Dana Kim"}, "json")
    order = agent.post(
        "/api/v1/sources", {"kind": "business_record", "content": "Order order-a."}, "json"
    )
    body = {
        "kind": "task_fact", "subject": dana.json()["id"], "field": "delivery_address",
        "value": "4 Dock Road", "statement": "Order order-a goes to the office.",
        "scope": {"task": "order-a"}, "owner": "rita", "expires_at": iso(later(14)),
        "sources": [order.json()["id"]],
    }  # fmt: skip
    memory = agent.post("/api/v1/memories", body, "json")
    assert memory.status_code == 201, memory.content
    return str(memory.json()["id"])


@pytest.mark.parametrize("writers", [2, 6])
def test_writers_correcting_the_same_head_at_once_one_wins_the_rest_get_409(
    world: World, writers: int
):
    memory_id = _order_a_fact(world)

    def correct(value: str) -> tuple[int, dict[str, Any]]:
        response = world.client("agent").post(
            f"/api/v1/memories/{memory_id}/versions",
            {"value": value},
            "json",
            HTTP_IF_MATCH='"1"',
        )
        return response.status_code, response.json()

    answers = together([partial(correct, f"{n} Dock Road") for n in range(writers)])

    statuses = sorted(status for status, _ in answers)
    assert statuses == [201] + [409] * (writers - 1)
    winner = next(body for status, body in answers if status == 201)
    assert all(body["current_version"] == 2 for status, body in answers if status == 409)
    versions = MemoryVersion.objects.filter(item_id=memory_id).order_by("number")
    assert [(v.number, v.status) for v in versions] == [(1, "superseded"), (2, "pending_review")]
    assert versions[1].value == winner["value"]
    assert MemoryItem.objects.get(pk=memory_id).head_version == 2
    corrected = AuditEvent.objects.filter(action="memory.corrected", target_id=memory_id)
    assert corrected.count() == 1
    assert audit_verify(tenant=world.tenant).ok


def test_concurrent_writes_of_one_tenant_append_one_unbroken_chain(world: World):
    before = AuditEvent.objects.filter(tenant=world.tenant).count()

    def record(n: int) -> list[int]:
        client = world.client("agent")
        return [
            client.post(
                "/api/v1/sources", {"kind": "message", "content": f"writer {n}, note {i}"}, "json"
            ).status_code
            for i in range(5)
        ]

    answers = together([partial(record, n) for n in range(6)])

    assert answers == [[201] * 5] * 6
    seqs = list(
        AuditEvent.objects.filter(tenant=world.tenant).order_by("seq").values_list("seq", flat=True)
    )
    assert seqs == list(range(1, before + 30 + 1))
    result = audit_verify(tenant=world.tenant)
    assert (result.ok, result.events_checked, result.first_bad_seq) == (True, before + 30, None)
    head = AuditChainHead.objects.get(tenant=world.tenant)
    last = AuditEvent.objects.get(tenant=world.tenant, seq=head.last_seq)
    assert (head.last_seq, head.last_hash) == (before + 30, last.hash)


def test_the_first_appends_of_a_new_tenant_race_to_create_its_chain_head(db: Any):
    """No chain head row yet: concurrent first appends must create exactly one and
    serialize on it, not each start a chain at seq 1."""
    tenant = Tenant.objects.create(slug="initech", name="Initech")
    assert not AuditChainHead.objects.filter(tenant=tenant).exists()

    def append(n: int) -> int:
        with transaction.atomic():
            event = audit_append(
                tenant=tenant, actor=f"agent:w{n}", action="test.appended",
                target_type="test", target_id=str(n),
            )  # fmt: skip
        return event.seq

    seqs = together([partial(append, n) for n in range(8)])

    assert sorted(seqs) == list(range(1, 9))
    assert AuditChainHead.objects.filter(tenant=tenant).count() == 1
    assert audit_verify(tenant=tenant).ok
