"""Every client method against a live server, told as seed 001's story: an agent records
the approval APR-2291, proposes the exception rule for project P-9, two reviewers approve,
the agent resolves before acting and checks its task before the consequential step; the
rule is corrected, rejected, retired, and the task learns it must re-verify."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memgov_client import Conflict, Forbidden, Memgov, NotFound
from memgov_client import types as t

P9 = {"project": "P-9"}


def _in(days: int) -> datetime:
    return datetime.now(UTC) + timedelta(days=days)


def _rule(agent: Memgov, subject: str, source: str, **extra) -> t.Memory:
    return agent.propose_memory(
        kind="enterprise_rule",
        subject=subject,
        field="material_checks",
        value="follow exception APR-2291",
        statement="Renewals of project P-9 follow exception APR-2291.",
        scope=P9,
        owner="rita",
        expires_at=_in(90),
        sources=[source],
        basis={"ref": "APR-2291", "version": "3"},
        **extra,
    )


@pytest.fixture
def renewal(connect) -> dict[str, str]:
    agent = connect("agent")
    entity = agent.create_entity(kind="process", name="Renewal purchasing", aliases=["renewals"])
    source = agent.record_source(
        kind="approval_record",
        content="APR-2291 v3: renewals of P-9 may skip the material checks.",
        external_ref="APR-2291",
        version="3",
    )
    return {"subject": entity["id"], "source": source["id"]}


def test_health_readiness_and_schema_answer(connect):
    agent = connect("agent")

    assert agent.health() == {"status": "ok"}
    assert agent.readiness()["status"] == "ok"
    assert "/api/v1/memories" in agent.openapi_schema()["paths"]


def test_entities_are_created_read_aliased_and_matched(connect):
    agent = connect("agent")

    created = agent.create_entity(kind="customer", name="Dana Kim", external_ref="CRM-7")
    aliased = agent.add_alias(created["id"], alias="D. Kim")
    fetched = agent.get_entity(created["id"])
    match = agent.match_entity("d. kim", kind="customer")
    nobody = agent.match_entity("Nobody Here")

    assert (created["name"], created["external_ref"], created["aliases"]) == (
        "Dana Kim",
        "CRM-7",
        [],
    )
    assert aliased["aliases"] == ["D. Kim"]
    assert fetched == aliased
    assert match["decision"] == "matched"
    assert [(c["id"], c["matched_on"]) for c in match["candidates"]] == [(created["id"], "alias")]
    assert nobody == {"decision": "none", "candidates": []}


def test_sources_are_recorded_read_and_revoked(connect, renewal):
    agent, rita = connect("agent"), connect("rita")
    memory = _rule(agent, renewal["subject"], renewal["source"])

    source = agent.get_source(renewal["source"])
    revoked = rita.revoke_source(renewal["source"], reason="APR-2291 was withdrawn")

    assert (source["kind"], source["external_ref"], source["version"]) == (
        "approval_record",
        "APR-2291",
        "3",
    )
    assert source["revoked_at"] is None and len(source["content_sha256"]) == 64
    assert revoked["source"] == renewal["source"]
    assert revoked["memories"] == [memory["id"]]
    assert agent.get_source(renewal["source"])["revoked_at"] is not None
    assert agent.get_memory(memory["id"])["status"] == "retired"


def test_the_rule_story_from_proposal_to_retirement(connect, renewal):
    agent, rita, lena = connect("agent"), connect("rita"), connect("lena")

    proposed = _rule(agent, renewal["subject"], renewal["source"])
    scenario = agent.add_scenario(proposed["id"], kind="applicable", context=P9, expect="applies")
    with pytest.raises(Forbidden):
        agent.approve(proposed["id"])
    rita.approve(proposed["id"], comment="rita checked APR-2291")
    with pytest.raises(Conflict):
        rita.approve(proposed["id"])
    active = lena.approve(proposed["id"], comment="lena checked APR-2291")

    assert proposed["status"] == "pending_review" and proposed["version"] == 1
    assert (scenario["kind"], scenario["expect"], scenario["context"]) == (
        "applicable",
        "applies",
        P9,
    )
    assert active["status"] == "active" and active["verification"] == "confirmed"
    assert [a["reviewer"] for a in active["approvals"]] == ["rita", "lena"]
    checks = agent.list_checks(proposed["id"])
    assert checks and {c["outcome"] for c in checks} == {"passed"}

    # Resolve before acting, with the task id, so a later change can flag the task.
    resolved = agent.resolve(renewal["subject"], context=P9, task_id="renewal-7", explain=True)
    assert [(f["memory_id"], f["value"]) for f in resolved["facts"]] == [
        (proposed["id"], "follow exception APR-2291")
    ]
    assert resolved["retrieval_id"] is not None
    assert [c["outcome"] for c in resolved.get("considered", [])] == ["selected"]
    task = agent.check_task("renewal-7")
    assert (task["needs_reverification"], [u["memory_id"] for u in task["used"]]) == (
        False,
        [proposed["id"]],
    )

    # A correction is a new pending version; the active one stays in use until it passes.
    corrected = agent.correct_memory(proposed["id"], active["version"], statement="Only renewals.")
    assert (corrected["version"], corrected["active_version"], corrected["status"]) == (
        2,
        1,
        "pending_review",
    )
    assert [v["version"] for v in agent.list_versions(proposed["id"])] == [1, 2]
    assert agent.get_version(proposed["id"], 1)["status"] == "active"
    rejected = rita.reject(proposed["id"], reason="The scope is unchanged; keep version 1.")
    assert (rejected["version"], rejected["status"]) == (2, "rejected")

    retirement = rita.retire(proposed["id"], reason="APR-2291 was withdrawn")
    assert retirement["flagged_tasks"] == ["renewal-7"]
    assert agent.resolve(renewal["subject"], context=P9, fields=["material_checks"])["facts"] == []
    after = agent.check_task("renewal-7")
    assert after["needs_reverification"] is True
    assert [(r["memory_id"], r["event"]) for r in after["reasons"]] == [(proposed["id"], "retired")]


def test_failed_checks_can_be_rechecked(connect, renewal):
    agent, rita, lena = connect("agent"), connect("rita"), connect("lena")
    memory = _rule(agent, renewal["subject"], renewal["source"])
    agent.add_scenario(
        memory["id"], kind="inapplicable", context={"project": "P-10"}, expect="applies"
    )
    rita.approve(memory["id"])
    failed = lena.approve(memory["id"])
    last_run = max(c["ran_at"] for c in agent.list_checks(memory["id"]))

    again = rita.recheck(memory["id"])

    assert failed["status"] == "checks_failed"
    assert again["status"] in {"checking", "checks_failed"}
    assert max(c["ran_at"] for c in agent.list_checks(memory["id"])) > last_run
    with pytest.raises(Forbidden):
        agent.recheck(memory["id"])


def test_an_unresolved_mention_is_linked_to_its_subject(connect, renewal):
    agent, rita = connect("agent"), connect("rita")
    held = agent.propose_memory(
        kind="enterprise_rule",
        subject_mention="the renewal process",
        field="material_checks",
        value="follow exception APR-2291",
        statement="Renewals of P-9 follow exception APR-2291.",
        scope=P9,
        owner="rita",
        expires_at=_in(30),
        sources=[renewal["source"]],
    )

    linked = rita.link_subject(held["id"], subject=renewal["subject"])

    assert held["status"] == "held_unresolved" and held["subject"] is None
    assert (linked["status"], linked["subject"]) == ("pending_review", renewal["subject"])


def test_lists_filter_by_kind_status_and_scope(connect, renewal):
    agent = connect("agent")
    memory = _rule(agent, renewal["subject"], renewal["source"])

    page = agent.list_memories(kind="enterprise_rule", status="pending_review", scope=P9)
    other_scope = agent.list_memories(scope={"project": "P-10"})

    assert [m["id"] for m in page["results"]] == [memory["id"]] and page["next"] is None
    assert other_scope == {"results": [], "next": None}


def test_policy_is_read_published_and_revalidated(connect):
    rita = connect("rita")
    current = rita.get_policy()

    published = rita.publish_policy(precedence=current["precedence"], reason="client test")
    job = rita.get_revalidation(published["revalidation"])
    started = rita.revalidate(reason="model changed")

    assert int(published["version"]) == int(current["version"]) + 1
    assert rita.get_policy()["version"] == published["version"]
    nothing_active = {"status": "done", "total": 0, "done": 0, "failed": 0, "flagged": []}
    assert {k: dict(job)[k] for k in nothing_active} == nothing_active
    assert rita.get_revalidation(started["revalidation"])["status"] == "done"
    with pytest.raises(Forbidden):
        connect("agent").revalidate(reason="an agent may not")


def test_the_audit_trail_is_listed_and_verified(connect, renewal):
    rita = connect("rita")
    memory = _rule(connect("agent"), renewal["subject"], renewal["source"])

    events = list(rita.iter_audit(target=memory["id"]))
    verification = rita.verify_audit()

    assert [e["action"] for e in events][:1] == ["memory.proposed"]
    assert all(e["target_id"] == memory["id"] for e in events)
    assert verification["ok"] is True and verification["first_bad_seq"] is None
    with pytest.raises(Forbidden):
        connect("agent").verify_audit()


def test_another_tenants_key_sees_nothing(connect, renewal):
    memory = _rule(connect("agent"), renewal["subject"], renewal["source"])

    with pytest.raises(NotFound) as caught:
        connect("zed").get_memory(memory["id"])

    assert (caught.value.status, caught.value.type) == (
        404,
        "https://memgov.dev/problems/not-found",
    )
