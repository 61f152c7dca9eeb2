"""Erasure of a subject, provably complete (issue 12): after it, no column of any table
and no Redis key holds what was said about her; the audit chain still verifies; a source
shared with another subject is kept and that subject's answers do not change."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.conf import settings
from django.core import mail
from django.core.management import call_command
from django_redis import get_redis_connection

from audit.models import AuditEvent
from audit.selectors import audit_verify
from core.kinds import OutboxKind
from core.models import IdempotencyRecord, Outbox
from memory import events
from memory.models import Entity, Erasure, MemoryVersion, RetrievalRecord, Source
from tests.approvals.support import Flow
from tests.erasure import story
from tests.erasure.story import NEEDLES, P9, build, scan_database, scan_redis
from tests.webhooks.receiver import Receiver, live_receiver
from tests.webhooks.support import create_webhook, webhook_manager
from webhooks.delivery import deliveries_due
from webhooks.models import WebhookDelivery
from webhooks.tasks import fan_out_event

REASON = {"reason": "Article 17 request, ticket PRIV-88"}


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    """A live webhook receiver on loopback, retried quickly."""
    settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE = True
    settings.MEMGOV_WEBHOOK_RETRY_BASE_SECONDS = 0.2
    with live_receiver() as receiver:
        yield receiver


def subscribe(flow: Flow, receiver: Receiver) -> None:
    webhook_manager(flow)
    receiver.secrets.append(create_webhook(flow, receiver.url, *events.EVENT_TYPES)["secret"])


def deliver_what_waits(flow: Flow) -> None:
    """Run the retry sweeper until no delivery waits (the retries are due within a second)."""
    deadline = time.monotonic() + 30
    while WebhookDelivery.objects.filter(status="pending").exists():
        assert time.monotonic() < deadline, list(WebhookDelivery.objects.values())
        time.sleep(0.1)
        with flow._committed():
            deliveries_due()


def export(flow: Flow, who: str, subject: str) -> Any:
    response = flow.get(who, f"/entities/{subject}/export")
    assert response.status_code == 200, response
    assert response.streaming
    return json.loads(b"".join(response.streaming_content))


def erase(flow: Flow, subject: str, who: str = "erin", reason: dict[str, str] = REASON) -> str:
    body = flow.ok(flow.post(who, f"/entities/{subject}/erase", reason), 202)
    assert body["erasure"].startswith("era_")
    return str(body["erasure"])


def test_the_export_before_an_erasure_holds_everything_about_her(flow: Flow):
    tale = build(flow)
    story.tell_in_free_text(flow, tale)

    document = export(flow, "erin", tale.subject)

    text = json.dumps(document, ensure_ascii=False)
    for needle in (*NEEDLES, story.RETIREMENT, story.REJECTION, story.SOURCE_REF):
        assert needle in text, needle
    versions = {v["memory_id"]: v for v in document["versions"]}
    approved, rejected, reception = tale.memories[3], tale.memories[4], tale.memories[2]
    [scenario] = versions[approved]["scenarios"]
    assert scenario["context"] == {"task": story.TASK, "caller": story.CALLER}
    [approval] = versions[approved]["approvals"]
    assert (approval["reviewer"], approval["comment"]) == ("rita", story.APPROVAL)
    assert versions[rejected]["approvals"][0]["comment"] == story.REJECTION
    [flag] = versions[reception]["task_flags"]
    assert (flag["task_id"], flag["reason"]) == ("task-q-1", story.RETIREMENT)
    assert document["entity"]["id"] == tale.subject
    assert [a["alias"] for a in document["aliases"]] == [story.ALIAS]
    assert {v["memory_id"] for v in document["versions"]} == set(tale.memories)
    assert {s["id"] for s in document["sources"]} == {*tale.sources, tale.shared_source}
    assert [r["task_id"] for r in document["retrievals"]] == ["task-q-1"] * 3
    actions = {e["action"] for e in document["audit_events"]}
    assert {"entity.created", "memory.proposed", "memory.active", "source.recorded"} <= actions
    # Each event as the audit API shows it, both hashes included: a reader can place it
    # in the tenant's chain.
    listed = flow.ok(flow.get("rita", f"/audit?target={tale.subject}"))["results"]
    exported = [e for e in document["audit_events"] if e["target_id"] == tale.subject]
    assert exported == sorted(listed, key=lambda e: e["seq"])
    assert {"prev_hash", "hash"} <= set(exported[0])


def test_after_an_erasure_nothing_about_her_is_left_anywhere_and_the_chain_verifies(
    flow: Flow, receiver: Receiver
):
    tale = build(flow)
    # What people wrote about her in passing; the retirement's delivery is refused, so it
    # waits at rest for a retry when the erasure starts.
    subscribe(flow, receiver)
    receiver.refuse_type = "memory.retired"
    story.tell_in_free_text(flow, tale)
    assert any(story.RETIREMENT in r.body.decode() for r in receiver.all())
    assert Outbox.objects.filter(payload__data__reason=story.RETIREMENT).exists()
    assert export(flow, "erin", tale.subject)  # the export came before
    before_other = flow.ok(flow.post("agent", "/resolve", {"subject": tale.other, "context": P9}))

    # The officer's own reason names her too: it is kept until the erasure is done.
    erasure_id = erase(flow, tale.subject, reason={"reason": f"{story.NAME} asked, Art. 17"})

    job = flow.ok(flow.get("erin", f"/erasures/{erasure_id}"))
    assert job["status"] == "done", job
    assert job["counts"] == {
        "items_retired": 3,
        "aliases": 1,
        "mentions": 0,
        "versions": 5,
        "approval_comments": 2,
        "scenarios": 1,
        "clarifications": 0,
        "clarification_options": 0,
        "check_results": job["counts"]["check_results"],
        "sources_purged": 3,
        "sources_kept": 1,
        "retrieval_records": 1,
        "retrieval_uses": 3,
        "task_flags": 1,
        "idempotency_records": 1,
        "outbox_rows": job["counts"]["outbox_rows"],
        "webhook_deliveries": job["counts"]["webhook_deliveries"],
        "cache_entries": job["counts"]["cache_entries"],
    }
    assert job["counts"]["outbox_rows"] >= 3  # retired, task flagged, rejected
    assert job["counts"]["webhook_deliveries"] >= 3
    assert job["kept"] == [{"source": tale.shared_source, "also_cited_for": [tale.other]}]
    # The refused retirement is sent again after the erasure finished: without her.
    finished = len(receiver.all())
    receiver.refuse_type = ""
    deliver_what_waits(flow)
    resent = [r.body.decode() for r in receiver.all()[finished:]]
    assert any('"type":"memory.retired"' in body for body in resent)
    assert not [body for body in resent if any(n in body for n in NEEDLES)]
    tables, found = scan_database(NEEDLES)
    assert found == []
    assert tables >= 30
    if settings.CACHE_URL:
        assert job["counts"]["cache_entries"] >= 1
        assert scan_redis(get_redis_connection("default"), NEEDLES) == []
    assert audit_verify(tenant=flow.world.tenant).ok
    out = StringIO()
    call_command("verify_audit", "--tenant", "acme", stdout=out)
    assert ": ok, " in out.getvalue()
    [event] = AuditEvent.objects.filter(action="subject.erased", target_id=tale.subject)
    assert event.data["counts"] == job["counts"]
    assert not any(n.casefold() in json.dumps(event.data).casefold() for n in NEEDLES)

    # The shared source is kept whole; the other subject's answer is unchanged.
    assert Source.objects.get(pk=tale.shared_source).content == story.SHARED
    after_other = flow.ok(flow.post("agent", "/resolve", {"subject": tale.other, "context": P9}))
    assert after_other["facts"] == before_other["facts"]
    # The digests stay: what was purged can still be proven.
    assert all(Source.objects.get(pk=s).content_sha256 for s in tale.sources)
    assert not RetrievalRecord.objects.filter(task_id="task-q-1").exists()
    assert not IdempotencyRecord.objects.filter(key="quill-1").exists()
    assert MemoryVersion.objects.filter(subject_id=tale.subject, erased_at=None).count() == 0
    print(f"column scan: {tables} tables")


def test_an_event_still_in_the_broker_during_the_erasure_is_sent_without_its_reason(
    flow: Flow, receiver: Receiver
):
    # Given her reception preference retired with a reason naming her, and the other
    # subject's retired too, before anyone subscribed; the retirement's event is taken as
    # the broker holds it, not yet fanned out.
    tale = build(flow)
    flow.ok(flow.retire(tale.memories[2], reason=story.RETIREMENT))
    flow.ok(flow.retire(tale.other_memory, reason="Harbor Logistics moved its calls"))
    [queued] = [
        dict(row.payload)
        for row in Outbox.objects.filter(kind=OutboxKind.WEBHOOK_EVENT)
        if row.payload["event_type"] == "memory.retired"
        and row.payload["data"]["reason"] == story.RETIREMENT
    ]
    subscribe(flow, receiver)

    # When she is erased, and only then the worker fans the event out.
    erase(flow, tale.subject)
    with flow._committed():
        fan_out_event.delay(**queued)

    # Then the receiver gets the event with its ids and no reason.
    [sent] = [r for r in receiver.all() if r.headers["webhook-id"] == queued["event_id"]]
    assert sent.verified_with
    assert sent.event["data"]["memory_id"] == tale.memories[2]
    assert sent.event["data"]["reason"] == "[erased]"
    assert not any(n in sent.body.decode() for n in NEEDLES)
    # The other subject's event keeps its reason, at rest too.
    [other] = [
        row.payload
        for row in Outbox.objects.filter(kind=OutboxKind.WEBHOOK_EVENT)
        if row.payload["event_type"] == "memory.retired"
        and row.payload["data"]["memory_id"] == tale.other_memory
    ]
    assert other["data"]["reason"] == "Harbor Logistics moved its calls"


def test_an_erased_subject_resolves_to_410_and_no_proposal_may_name_it(flow: Flow):
    tale = build(flow)
    erase(flow, tale.subject)

    for extra in ({}, {"known_at": "2020-01-01T00:00:00Z"}, {"task_id": "t-2"}):
        response = flow.post("agent", "/resolve", {"subject": tale.subject, "context": P9, **extra})
        assert response.status_code == 410, extra
        assert response.json()["type"] == "https://memgov.dev/problems/erased"
    proposal = flow.body("preference", {}, subject=tale.subject, sources=[tale.shared_source])
    refused = flow.post("agent", "/memories", proposal)
    assert refused.status_code == 410
    assert refused.json()["errors"] == {"subject": [f"entity {tale.subject} was erased"]}
    matched = flow.ok(flow.post("agent", "/entities/match", {"name": story.NAME}))
    assert matched["decision"] == "none"
    assert Entity.objects.get(pk=tale.subject).name == "[erased]"


def test_the_requester_is_told_without_personal_content(flow: Flow):
    tale = build(flow)
    mail.outbox.clear()

    erasure_id = erase(flow, tale.subject)

    [notice] = [m for m in mail.outbox if erasure_id in m.subject]
    assert notice.to == ["erin@example.com"]
    body = str(notice.subject) + str(notice.body) + str(getattr(notice, "alternatives", ""))
    assert tale.subject in body
    assert not any(n.casefold() in body.casefold() for n in NEEDLES)
    # Owners were not mailed the retired statements.
    assert not [m for m in mail.outbox if m.subject.startswith("[Memgov] Retired")]


def test_a_finished_erasure_is_announced_to_webhooks_with_counts_and_no_content(flow: Flow):
    tale = build(flow)

    erasure_id = erase(flow, tale.subject)

    [event] = [
        row.payload
        for row in Outbox.objects.filter(kind="webhook.event")
        if row.payload["event_type"] == "subject.erased"
    ]
    assert event["data"] == {
        "subject": tale.subject,
        "erasure": erasure_id,
        "counts": Erasure.objects.get(pk=erasure_id).counts,
    }
    assert not any(n.casefold() in json.dumps(event).casefold() for n in NEEDLES)


def test_erasing_twice_answers_with_the_same_erasure_and_counts_nothing_twice(flow: Flow):
    tale = build(flow)
    first = erase(flow, tale.subject)
    counts = Erasure.objects.get(pk=first).counts

    assert erase(flow, tale.subject) == first
    assert Erasure.objects.get(pk=first).counts == counts
    assert AuditEvent.objects.filter(action="subject.erased").count() == 1


def test_erasing_another_subject_later_counts_none_of_her_redacted_events_again(
    flow: Flow, receiver: Receiver
):
    tale = build(flow)
    subscribe(flow, receiver)
    story.tell_in_free_text(flow, tale)
    first = Erasure.objects.get(pk=erase(flow, tale.subject)).counts
    assert first["outbox_rows"] >= 3 and first["webhook_deliveries"] >= 3
    # The other subject's own events with a reason (its activation, before subscribing).
    own = [
        row.pk
        for row in Outbox.objects.filter(kind=OutboxKind.WEBHOOK_EVENT)
        if row.payload["data"].get("memory_id") == tale.other_memory
        and row.payload["data"].get("reason")
    ]

    second = Erasure.objects.get(pk=erase(flow, tale.other)).counts

    assert (second["outbox_rows"], second["webhook_deliveries"]) == (len(own), 0)


@pytest.mark.parametrize(
    ("who", "status"),
    [("agent", 403), ("rita", 403), ("nora", 403), ("zed", 404)],
)
def test_who_may_erase_agent_reviewer_without_the_permission_other_tenant(
    flow: Flow, who: str, status: int
):
    from accounts.grants import permission_grant

    permission_grant(
        tenant=flow.world.other_tenant, user=flow.world.users["zed"], codename="erase_subject"
    )
    tale = build(flow)

    assert flow.post(who, f"/entities/{tale.subject}/erase", REASON).status_code == status
    assert flow.get(who, f"/entities/{tale.subject}/export").status_code == (
        404 if who == "zed" else 200 if who == "rita" else 403
    )
    assert Entity.objects.get(pk=tale.subject).erased_at is None
    assert flow.memory(tale.memories[0])["status"] == "active"


def test_an_erasure_needs_a_reason(flow: Flow):
    tale = build(flow)
    refused = flow.post("erin", f"/entities/{tale.subject}/erase", {"reason": ""})
    assert refused.status_code == 422
    assert Entity.objects.get(pk=tale.subject).erased_at is None
