"""The audit trail: every write appends a chained event in its own transaction, the chain
finds the first tampered row, PostgreSQL refuses to change it, only ``view_audit`` reads it,
and it holds digests of what people said, never the words (docs/design.md, Audit)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from audit.chain import GENESIS_HASH, digest
from audit.models import AuditEvent
from tests.api.support import assert_problem, create_entity, record_source, tamper
from tests.conftest import iso, later, needs


def _actions_since(seq: int, tenant) -> list[str]:
    events = AuditEvent.objects.filter(tenant=tenant, seq__gt=seq).order_by("seq")
    return list(events.values_list("action", flat=True))


def _last_seq(tenant) -> int:
    last = AuditEvent.objects.filter(tenant=tenant).order_by("-seq").first()
    return last.seq if last else 0


@pytest.fixture
def story(world) -> dict[str, str]:
    """Dana's office delivery for order-a, pending review, plus a held mention."""
    agent = world.client("agent")
    dana = create_entity(agent, "Dana Kim")
    order = record_source(agent, "business_record", "Order order-a: to the office.")
    fact = {
        "kind": "task_fact", "subject": dana, "field": "delivery_address",
        "value": "4 Dock Road", "statement": "Order order-a goes to the office.",
        "scope": {"task": "order-a"}, "owner": "rita", "expires_at": iso(later(14)),
        "sources": [order],
    }  # fmt: skip
    memory = agent.post("/api/v1/memories", fact, "json").json()["id"]
    held = agent.post(
        "/api/v1/memories", {**fact, "subject": None, "subject_mention": "Dana K."}, "json"
    ).json()["id"]
    return {"dana": dana, "order": order, "memory": memory, "held": held}


Write = Callable[[Any, dict[str, str]], Any]

WRITES: list[tuple[str, str, Write, list[str]]] = [
    (
        "record_source",
        "agent",
        lambda c, s: c.post("/api/v1/sources", {"kind": "message", "content": "hi"}, "json"),
        ["source.recorded"],
    ),
    (
        "create_entity",
        "agent",
        lambda c, s: c.post("/api/v1/entities", {"kind": "customer", "name": "Sam"}, "json"),
        ["entity.created"],
    ),
    (
        "add_alias",
        "agent",
        lambda c, s: c.post(f"/api/v1/entities/{s['dana']}/aliases", {"alias": "DK"}, "json"),
        ["entity.alias_added"],
    ),
    (
        "correct",
        "agent",
        lambda c, s: c.post(
            f"/api/v1/memories/{s['memory']}/versions",
            {"value": "5 Dock Road"},
            "json",
            HTTP_IF_MATCH='"1"',
        ),
        ["memory.superseded", "memory.corrected"],
    ),
    (
        "approve",
        "rita",
        lambda c, s: c.post(f"/api/v1/memories/{s['memory']}/approve", {}, "json"),
        ["memory.approved", "memory.checking"],
    ),
    (
        "reject",
        "rita",
        lambda c, s: c.post(f"/api/v1/memories/{s['memory']}/reject", {"reason": "no"}, "json"),
        ["memory.rejected"],
    ),
    (
        "retire",
        "rita",
        lambda c, s: c.post(f"/api/v1/memories/{s['memory']}/retire", {"reason": "x"}, "json"),
        ["memory.retired"],
    ),
    (
        "add_scenario",
        "rita",
        lambda c, s: c.post(
            f"/api/v1/memories/{s['memory']}/scenarios",
            {"kind": "inapplicable", "context": {"task": "order-b"}, "expect": "does_not_apply"},
            "json",
        ),
        ["memory.scenario_added"],
    ),
    (
        "link_subject",
        "rita",
        lambda c, s: c.post(
            f"/api/v1/memories/{s['held']}/link-subject", {"subject": s["dana"]}, "json"
        ),
        ["memory.pending_review"],
    ),
    (
        "revoke_source",
        "rita",
        lambda c, s: c.post(f"/api/v1/sources/{s['order']}/revoke", {"reason": "void"}, "json"),
        ["source.revoked", "memory.retired", "memory.retired"],
    ),
]


@pytest.mark.parametrize(
    ("who", "write", "actions"),
    [(w, f, a) for _, w, f, a in WRITES],
    ids=[name for name, *_ in WRITES],
)
def test_every_write_appends_its_events_to_the_chain(world, story, who, write, actions):
    before = _last_seq(world.tenant)

    response = write(world.client(who), story)

    assert response.status_code in (200, 201), response.content
    assert _actions_since(before, world.tenant) == actions
    events = AuditEvent.objects.filter(tenant=world.tenant, seq__gt=before)
    assert {e.actor for e in events} == {"agent:bot" if who == "agent" else f"user:{who}"}
    assert world.client("rita").get("/api/v1/audit/verify").json()["ok"] is True


def test_a_proposal_appends_memory_proposed_with_its_digests(world, story):
    event = AuditEvent.objects.get(tenant=world.tenant, target_id=story["memory"])

    assert event.action == "memory.proposed"
    assert event.target_type == "memory"
    assert event.data["value_sha256"] == digest("4 Dock Road")
    assert event.data["statement_sha256"] == digest("Order order-a goes to the office.")
    assert event.data["scope_dimensions"] == ["task"]
    assert event.data["sources"] == [story["order"]]


def test_reads_append_nothing(world, story):
    before = AuditEvent.objects.count()
    rita = world.client("rita")

    rita.get("/api/v1/memories")
    rita.get(f"/api/v1/memories/{story['memory']}/versions")
    rita.get(f"/api/v1/sources/{story['order']}")
    rita.post("/api/v1/resolve", {"subject": story["dana"], "context": {}}, "json")
    rita.get("/api/v1/audit")
    rita.get("/api/v1/audit/verify")

    assert AuditEvent.objects.count() == before


def test_a_refused_write_appends_nothing(world, story):
    before = AuditEvent.objects.count()

    world.client("agent").post(f"/api/v1/memories/{story['memory']}/approve", {}, "json")
    world.client("omar").post(f"/api/v1/memories/{story['memory']}/approve", {}, "json")

    assert AuditEvent.objects.count() == before


def test_the_chain_verifies_and_counts_every_event(world, story):
    response = world.client("rita").get("/api/v1/audit/verify")

    assert response.status_code == 200
    assert response.json() == {
        "ok": True,
        "events_checked": AuditEvent.objects.filter(tenant=world.tenant).count(),
        "first_bad_seq": None,
        "reason": None,
        "keyed_from": 1,
        "missing_key_ids": [],
    }


def test_events_link_each_to_the_previous_hash(world, story):
    events = list(AuditEvent.objects.filter(tenant=world.tenant).order_by("seq"))

    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[0].prev_hash == GENESIS_HASH
    assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(events))


@pytest.mark.parametrize(
    ("sql", "seq"),
    [
        ("UPDATE audit_auditevent SET data = '{}' WHERE id = %s", 3),
        ("UPDATE audit_auditevent SET actor = 'user:mallory' WHERE id = %s", 3),
        ("UPDATE audit_auditevent SET action = 'memory.approved' WHERE id = %s", 5),
        ("UPDATE audit_auditevent SET target_id = 'mem_other' WHERE id = %s", 7),
        ("DELETE FROM audit_auditevent WHERE id = %s", 3),
    ],
    ids=["data_edited", "actor_edited", "action_edited", "target_edited", "row_deleted"],
)
def test_a_row_tampered_with_in_sql_is_found_at_its_seq(world, story, sql: str, seq: int):
    """Even someone who gets past the application (and, on PostgreSQL, the trigger)
    cannot change the record without the chain saying where."""
    target = AuditEvent.objects.get(tenant=world.tenant, seq=seq)

    tamper(sql, [target.pk])

    response = world.client("rita").get("/api/v1/audit/verify").json()
    reason = "link" if sql.startswith("DELETE") else "hash"
    assert response == {
        "ok": False, "events_checked": seq - 1, "first_bad_seq": seq, "reason": reason,
        "keyed_from": 1, "missing_key_ids": [],
    }  # fmt: skip


def test_recomputing_the_plain_hash_of_an_edited_row_is_found_at_that_row(world, story):
    """The forger rewrites seq 3 and its hash with the plain sha256 of the code: without
    the key, the hash is not the HMAC the chain is keyed with (before keying, the next
    link was where this showed)."""
    event = AuditEvent.objects.get(tenant=world.tenant, seq=3)
    forged = dict(event.data, forged=True)
    from audit.chain import event_hash

    new_hash = event_hash(
        prev_hash=event.prev_hash, seq=3, at=event.at, actor=event.actor, action=event.action,
        target_type=event.target_type, target_id=event.target_id, data=forged,
    )  # fmt: skip
    tamper(
        "UPDATE audit_auditevent SET data = %s, hash = %s WHERE id = %s",
        [json.dumps(forged), new_hash, event.pk],
    )

    response = world.client("rita").get("/api/v1/audit/verify").json()
    assert (response["ok"], response["events_checked"], response["first_bad_seq"]) == (
        False, 2, 3,
    )  # fmt: skip


def test_tampering_in_another_tenant_leaves_this_chain_valid(world, story):
    zed_first = AuditEvent.objects.filter(tenant=world.other_tenant).order_by("seq")[0]

    tamper("UPDATE audit_auditevent SET actor = 'x' WHERE id = %s", [zed_first.pk])

    assert world.client("rita").get("/api/v1/audit/verify").json()["ok"] is True
    assert world.client("zed").get("/api/v1/audit/verify").json()["first_bad_seq"] == 1


@needs("postgres")
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE audit_auditevent SET actor = 'user:mallory' WHERE tenant_id = %s",
        "DELETE FROM audit_auditevent WHERE tenant_id = %s",
    ],
)
def test_postgresql_refuses_to_update_or_delete_an_audit_event(world, sql: str):
    count = AuditEvent.objects.filter(tenant=world.tenant).count()

    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql, [world.tenant.pk])

    assert AuditEvent.objects.filter(tenant=world.tenant).count() == count
    assert not AuditEvent.objects.filter(actor="user:mallory").exists()


@needs("postgres")
def test_postgresql_refuses_an_orm_update_too(world):
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        AuditEvent.objects.filter(tenant=world.tenant).update(actor="user:mallory")


@pytest.mark.parametrize("path", ["/api/v1/audit", "/api/v1/audit/verify"])
def test_only_view_audit_reads_the_trail(world, path: str):
    """Rita holds view_audit; an agent, a person without grants and reviewers of other
    things (Omar for P-9, Lena for rules) do not."""
    assert world.client("rita").get(path).status_code == 200
    for who in ("agent", "nora", "omar", "lena"):
        assert_problem(world.client(who).get(path), 403)


def test_the_list_shows_events_in_chain_order_with_their_hashes(world, story):
    page = world.client("rita").get("/api/v1/audit?limit=3").json()

    events = page["results"]
    assert [e["seq"] for e in events] == [1, 2, 3]
    assert sorted(events[0]) == [
        "action", "actor", "at", "data", "hash", "key_id", "prev_hash", "seq", "target_id",
        "target_type",
    ]  # fmt: skip
    assert events[0]["action"] == "tenant.created"
    assert events[1]["prev_hash"] == events[0]["hash"]
    assert events[0]["at"].endswith("Z")
    assert page["next"] is not None


def test_the_list_pages_through_the_whole_chain(world, story):
    rita = world.client("rita")
    url = "/api/v1/audit?limit=4"
    seqs: list[int] = []
    while url:
        page = rita.get(url).json()
        seqs += [e["seq"] for e in page["results"]]
        url = page["next"]

    assert seqs == list(range(1, AuditEvent.objects.filter(tenant=world.tenant).count() + 1))


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"target": "{memory}"}, ["memory.proposed"]),
        ({"actor": "agent:bot", "action": "entity.created"}, ["entity.created"]),
        ({"action": "memory.proposed"}, ["memory.proposed", "memory.proposed"]),
        ({"action": "permission.granted", "actor": "user:rita"}, []),
        ({"target": "rita", "action": "user.created"}, ["user.created"]),
    ],
)
def test_the_list_filters_by_target_actor_and_action(world, story, query, expected):
    params = {k: v.format(**story) for k, v in query.items()}

    events = world.client("rita").get("/api/v1/audit", params).json()["results"]

    assert [e["action"] for e in events] == expected


def test_the_list_filters_by_since(world, story):
    rita = world.client("rita")
    cut = AuditEvent.objects.get(tenant=world.tenant, target_id=story["memory"]).at

    events = rita.get("/api/v1/audit", {"since": iso(cut)}).json()["results"]
    future = rita.get("/api/v1/audit", {"since": iso(timezone.now() + timedelta(days=1))})

    assert events[0]["target_id"] == story["memory"]
    assert all(e["at"] >= iso(cut) for e in events)
    assert future.json()["results"] == []


@pytest.mark.parametrize("since", ["yesterday", "2026-01-01T00:00:00", "2026-13-01T00:00:00Z"])
def test_a_since_that_is_not_a_zoned_time_is_a_422(world, since: str):
    assert_problem(world.client("rita").get("/api/v1/audit", {"since": since}), 422, "since")


def test_audit_lists_never_cross_tenants(world, story):
    actions = {e["target_id"] for e in world.client("zed").get("/api/v1/audit").json()["results"]}

    assert story["memory"] not in actions
    assert "globex" in actions


SECRETS = [
    "Dana moved to 77 Hidden Lane",
    "deliver to 77 Hidden Lane",
    "Dana says 77 Hidden Lane is private",
    "comment about Dana's divorce",
    "reason: Dana's divorce",
]


def test_events_hold_digests_never_what_people_said(world):
    agent, rita, lena = world.client("agent"), world.client("rita"), world.client("lena")
    dana = create_entity(agent, "Dana Kim", aliases=["Dana K."])
    said = record_source(agent, "approval_record", SECRETS[0])
    fact = {
        "kind": "task_fact", "subject": dana, "field": "delivery_address",
        "value": {"street": SECRETS[1]}, "statement": SECRETS[2], "scope": {"task": "order-a"},
        "owner": "rita", "expires_at": iso(later(14)), "sources": [said],
    }  # fmt: skip
    first = agent.post("/api/v1/memories", fact, "json").json()["id"]
    agent.post(
        f"/api/v1/memories/{first}/versions",
        {"statement": SECRETS[2] + " (corrected)"},
        "json",
        HTTP_IF_MATCH='"1"',
    )
    assert (
        rita.post(f"/api/v1/memories/{first}/approve", {"comment": SECRETS[3]}, "json").status_code
        == 200
    )
    second = agent.post("/api/v1/memories", fact, "json").json()["id"]
    lena_denied = lena.post(f"/api/v1/memories/{second}/reject", {"reason": SECRETS[4]}, "json")
    assert lena_denied.status_code == 403
    rita.post(f"/api/v1/memories/{second}/reject", {"reason": SECRETS[4]}, "json")
    rita.post(f"/api/v1/sources/{said}/revoke", {"reason": SECRETS[4]}, "json")

    stored = json.dumps(list(AuditEvent.objects.values("data", "target_id", "action", "actor")))
    served = rita.get("/api/v1/audit?limit=200").content.decode()

    for secret in [*SECRETS, "77 Hidden Lane", "Dana K.", "divorce"]:
        assert secret not in stored
        assert secret not in served
    recorded = AuditEvent.objects.get(action="source.recorded", target_id=said)
    assert recorded.data["content_sha256"] == digest(SECRETS[0])
    approved = AuditEvent.objects.get(action="memory.approved", target_id=first)
    assert approved.data["comment_sha256"] == digest(SECRETS[3])
