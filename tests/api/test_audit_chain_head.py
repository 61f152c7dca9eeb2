"""Issue 11, point 8: the audit trail cannot be emptied in one statement, and a trail that
was emptied or cut short anyway fails verification against the chain head."""

from __future__ import annotations

import json

import pytest
from django.db import DatabaseError, connection, transaction

from audit.chain import event_hash
from audit.models import AuditChainHead, AuditEvent
from tests.api.support import create_entity, record_source, tamper
from tests.conftest import needs


@pytest.fixture
def trail(world) -> int:
    """A few events beyond the tenant's and personas' own: the chain head's seq."""
    agent = world.client("agent")
    record_source(agent)
    create_entity(agent)
    return AuditChainHead.objects.get(tenant=world.tenant).last_seq


def _verify(world) -> dict[str, object]:
    """The verdict without ``keyed_from`` and ``missing_key_ids`` (always 1 and [] here)."""
    answer = dict(world.client("rita").get("/api/v1/audit/verify").json())
    assert (answer.pop("keyed_from"), answer.pop("missing_key_ids")) == (1, [])
    return answer


@needs("postgres")
@pytest.mark.parametrize("table", ["audit_auditevent", "audit_auditchainhead"])
def test_postgresql_refuses_to_truncate_the_audit_tables(world, trail: int, table: str):
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        # The test harness allows TRUNCATE for its flushes; an application session does not.
        cursor.execute("SET LOCAL memgov.allow_truncate = 'off'")
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the fixture's deferred FK checks
        cursor.execute(f"TRUNCATE {table} CASCADE")

    assert AuditEvent.objects.filter(tenant=world.tenant).count() == trail
    assert _verify(world)["ok"] is True


def test_an_emptied_trail_fails_verification_at_seq_1(world, trail: int):
    tamper("DELETE FROM audit_auditevent WHERE tenant_id = %s", [world.tenant.pk])

    assert _verify(world) == {
        "ok": False, "events_checked": 0, "first_bad_seq": 1, "reason": "head",
    }  # fmt: skip


def test_a_trail_cut_short_fails_at_the_first_missing_seq(world, trail: int):
    tamper(
        "DELETE FROM audit_auditevent WHERE tenant_id = %s AND seq > %s",
        [world.tenant.pk, trail - 2],
    )

    assert _verify(world) == {
        "ok": False, "events_checked": trail - 2, "first_bad_seq": trail - 1, "reason": "head",
    }  # fmt: skip


def test_a_last_event_rewritten_with_a_consistent_hash_fails_at_its_seq(world, trail: int):
    last = AuditEvent.objects.get(tenant=world.tenant, seq=trail)
    forged = dict(last.data, forged=True)
    new_hash = event_hash(
        prev_hash=last.prev_hash, seq=last.seq, at=last.at, actor=last.actor,
        action=last.action, target_type=last.target_type, target_id=last.target_id, data=forged,
    )  # fmt: skip

    tamper(
        "UPDATE audit_auditevent SET data = %s, hash = %s WHERE id = %s",
        [json.dumps(forged), new_hash, last.pk],
    )

    assert _verify(world) == {
        "ok": False, "events_checked": trail - 1, "first_bad_seq": trail, "reason": "hash",
    }  # fmt: skip


def test_an_intact_trail_verifies_up_to_the_head(world, trail: int):
    assert _verify(world) == {
        "ok": True, "events_checked": trail, "first_bad_seq": None, "reason": None,
    }  # fmt: skip
