"""Issue 15: a held mention is seen (queue and email of reviewers with authority) and
resolved in place: linked to an existing entity or to one created with its aliases,
audited, after which it waits for review like any other proposal."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail

from approvals.notifications import notify_held_mention
from audit.models import AuditEvent
from memory import proposals
from memory.models import Alias, Entity, MemoryVersion
from tests.conftest import later
from tests.dashboard.support import Demo


@pytest.fixture
def commit(django_capture_on_commit_callbacks: Any) -> Any:
    return lambda: django_capture_on_commit_callbacks(execute=True)


def _held(demo: Demo, commit: Any, mention: str = "Dana") -> MemoryVersion:
    order = demo.item("order_a").versions.get().source_ids
    mail.outbox.clear()
    with commit():
        return proposals.memory_propose(
            principal=demo.agent(),
            data={
                "kind": "task_fact",
                "subject_mention": mention,
                "field": "delivery_window",
                "value": "mornings",
                "statement": f"{mention} wants order-b delivered in the morning.",
                "scope": {"task": "order-b"},
                "owner": "sam",
                "expires_at": later(7),
                "sources": order,
            },
        )


def test_a_held_mention_is_in_the_queue_and_the_mail_of_reviewers_with_authority(
    demo: Demo, commit: Any
) -> None:
    held = _held(demo, commit)

    assert held.status == "held_unresolved"
    [email] = mail.outbox
    assert email.to == [demo.users["rita"].email]
    assert 'Needs a subject: "Dana"' in email.subject
    assert "Dana wants order-b delivered in the morning." in email.body
    assert "It might be: Dana Kim (customer)" in email.body
    assert f"/memories/{held.item_id}/#subject" in email.body
    queue = demo.client("rita").get("/").content.decode()
    assert "Needs a subject" in queue and "“Dana”" in queue
    for outsider in ("omar", "sam"):  # P-9 only; no review authority
        assert "Needs a subject" not in demo.client(outsider).get("/").content.decode()


def test_the_email_is_sent_once_however_often_the_task_runs(demo: Demo, commit: Any) -> None:
    held = _held(demo, commit)

    assert notify_held_mention(held.pk) == 0
    assert len(mail.outbox) == 1


def test_a_reviewer_links_it_on_its_page_and_it_waits_for_review(demo: Demo, commit: Any) -> None:
    held = _held(demo, commit)
    page = demo.client("rita").get(f"/memories/{held.item_id}/").content.decode()
    dana = str(demo.item("order_a").subject_id)

    with commit():
        response = demo.client("rita").post(
            f"/memories/{held.item_id}/subject/", {"subject": dana, "confirm": "on"}
        )

    assert "Needs a subject: “Dana”" in page and "a word of its name" in page
    assert response.status_code == 302 and response["Location"] == f"/memories/{held.item_id}/"
    version = MemoryVersion.objects.get(item_id=held.item_id)
    assert (version.status, version.subject_id) == ("pending_review", dana)
    assert "Dana wants order-b" in demo.client("rita").get("/").content.decode()
    assert AuditEvent.objects.filter(target_id=held.item_id, data__to="pending_review").exists()


def test_a_reviewer_creates_the_entity_with_aliases_in_place(demo: Demo, commit: Any) -> None:
    held = _held(demo, commit, mention="Priya")

    with commit():
        response = demo.client("rita").post(
            f"/memories/{held.item_id}/subject/new/",
            {
                "name": "Priya Customer",
                "kind": "customer",
                "aliases": "Priya, P. Customer",
                "confirm": "on",
            },
        )

    assert response.status_code == 302
    entity = Entity.objects.get(name="Priya Customer")
    assert sorted(Alias.objects.filter(entity=entity).values_list("alias", flat=True)) == [
        "P. Customer",
        "Priya",
    ]
    version = MemoryVersion.objects.get(item_id=held.item_id)
    assert (version.status, version.subject_id) == ("pending_review", entity.pk)
    assert AuditEvent.objects.filter(action="entity.created", target_id=entity.pk).exists()


def test_without_authority_nothing_is_created_or_linked(demo: Demo, commit: Any) -> None:
    held = _held(demo, commit, mention="Priya")
    body = {"name": "Priya Customer", "kind": "customer", "aliases": "Priya", "confirm": "on"}

    refused = demo.client("omar").post(f"/memories/{held.item_id}/subject/new/", body)
    invalid = demo.client("rita").post(
        f"/memories/{held.item_id}/subject/new/", {**body, "name": ""}
    )

    assert refused.status_code == 404  # not within omar's oversight
    assert invalid.status_code == 422
    assert not Entity.objects.filter(name="Priya Customer").exists()
    assert MemoryVersion.objects.get(item_id=held.item_id).status == "held_unresolved"
