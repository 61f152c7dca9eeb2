"""Issue 43, point 1: a value question ("send it there") is seen and answered in the
dashboard. The queue lists every open question in words; the item page shows the question
and the options the reviewer may see now, each with the memory it comes from, and answers
through ``memory_clarify``; the Entities page offers no link for a proposal that has a
subject; the email states the question; the page afterwards says what was chosen."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core import mail
from django.core.mail import EmailMultiAlternatives

from approvals import checking, services
from audit.models import AuditEvent
from core.models import Outbox
from memory import proposals
from memory.models import MemoryVersion
from tests.conftest import later
from tests.dashboard.support import Demo

QUESTION = "Which delivery address does “there” mean?"


@pytest.fixture
def commit(django_capture_on_commit_callbacks: Any) -> Any:
    return lambda: django_capture_on_commit_callbacks(execute=True)


def activate_order_a(demo: Demo, commit: Any) -> MemoryVersion:
    """rita approves "Order order-a goes to Dana's office." and its gate checks pass."""
    with commit():
        version = services.version_approve(
            principal=demo.principal("rita"), item=demo.item("order_a"), comment="per the order"
        )
    checking.gate(version.pk)
    version.refresh_from_db()
    assert version.status == "active", version.status_reason
    return version


def send_it_there(demo: Demo, commit: Any) -> MemoryVersion:
    """Order order-b: the customer said "send it there" (Dana has two addresses in use)."""
    order = demo.item("order_a")
    mail.outbox.clear()
    with commit():
        return proposals.memory_propose(
            principal=demo.agent(),
            data={
                "kind": "task_fact",
                "subject": str(order.subject_id),
                "field": "delivery_address",
                "value": "there",
                "statement": "Order order-b goes where the customer said.",
                "scope": {"task": "order-b"},
                "owner": "sam",
                "expires_at": later(7),
                "sources": order.versions.get(number=1).source_ids,
            },
        )


def held_dana(demo: Demo, commit: Any) -> MemoryVersion:
    order = demo.item("order_a").versions.get(number=1).source_ids
    with commit():
        return proposals.memory_propose(
            principal=demo.agent(),
            data={
                "kind": "task_fact",
                "subject_mention": "Dana",
                "field": "delivery_window",
                "value": "mornings",
                "statement": "Dana wants order-b delivered in the morning.",
                "scope": {"task": "order-b"},
                "owner": "sam",
                "expires_at": later(7),
                "sources": order,
            },
        )


def _option(page: str, value: str) -> str:
    """The option id of the radio whose label shows ``value``."""
    found = re.search(r'value="(opt_\d+)"[^>]*> <strong class="option-value">“' + value, page)
    assert found, page
    return found.group(1)


def test_the_queue_shows_each_open_question_in_one_section(demo: Demo, commit: Any) -> None:
    activate_order_a(demo, commit)
    value = send_it_there(demo, commit)
    subject = held_dana(demo, commit)

    queue = demo.client("rita").get("/").content.decode()

    assert "Open questions" in queue
    assert f"<strong>Needs a value:</strong> {QUESTION}" in queue
    assert "<strong>Needs a subject:</strong> Which entity does “Dana” mean?" in queue
    assert f"/memories/{value.item_id}/#question" in queue
    assert f"/memories/{subject.item_id}/#subject" in queue
    assert "mentions <strong>“”</strong>" not in queue


def test_the_item_page_shows_the_question_and_answers_it_with_memory_clarify(
    demo: Demo, commit: Any
) -> None:
    order_a = activate_order_a(demo, commit)
    held = send_it_there(demo, commit)
    rita = demo.client("rita")

    page = rita.get(f"/memories/{held.item_id}/").content.decode()

    assert f"Needs a value: {QUESTION}" in page
    assert "not given yet: the agent said “there”" in page
    assert '<pre class="value">null</pre>' not in page
    assert (
        f'from <a href="/memories/{order_a.item_id}/">Order order-a goes to Dana&#x27;s office.</a>'
        in page
    )
    assert "Dana normally wants deliveries at home." in page
    office = _option(page, "4 Dock Road")

    with commit():
        answered = rita.post(f"/memories/{held.item_id}/clarify/", {"choice": office}, follow=True)

    version = MemoryVersion.objects.get(pk=held.pk)
    assert (version.status, version.value) == ("pending_review", "4 Dock Road")
    after = answered.content.decode()
    said = "value clarified: “4 Dock Road”, from “Order order-a goes to Dana&#x27;s office.”"
    assert said in after  # the message after the answer
    status_line = after.split('id="status-line"')[1].split("</span>")[0]
    assert (
        f'value clarified: “4 Dock Road”, from <a href="/memories/{order_a.item_id}/">'
        "“Order order-a goes to Dana&#x27;s office.”</a>" in status_line
    )
    # Stored, the reason names the value only: the statement it came from is shown live,
    # to who may see it, and is not copied where an erasure of its subject would miss it.
    assert version.status_reason == "value clarified: “4 Dock Road”"
    assert "opt_" not in status_line
    assert "Needs a value" not in after
    event = AuditEvent.objects.get(action="memory.clarified", target_id=held.item_id)
    assert event.actor == "user:rita" and "4 Dock" not in str(event.data)
    # The tenant's webhooks are told ids, never the value.
    [told] = [
        o.payload
        for o in Outbox.objects.filter(kind="webhook.event")
        if o.payload.get("data", {}).get("memory_id") == held.item_id
        and o.payload["event_type"] == "memory.pending_review"
    ]
    assert told["data"]["reason"].startswith(f"value clarified as {office} (copied from mem_")
    assert "Dock" not in str(told)


def test_an_option_the_reviewer_may_no_longer_see_is_neither_shown_nor_accepted(
    demo: Demo, commit: Any
) -> None:
    order_a = activate_order_a(demo, commit)
    held = send_it_there(demo, commit)
    rita = demo.client("rita")
    office = _option(rita.get(f"/memories/{held.item_id}/").content.decode(), "4 Dock Road")
    # Since the question was asked, order-a became finance's only.
    MemoryVersion.objects.filter(item_id=order_a.item_id).update(
        visibility=["finance"], required_visibility=[["finance"]]
    )

    page = rita.get(f"/memories/{held.item_id}/").content.decode()
    refused = rita.post(f"/memories/{held.item_id}/clarify/", {"choice": office})

    question = page.split('id="question"')[1].split("</section>")[0]
    assert "4 Dock Road" not in question and "Order order-a goes" not in question
    assert "Dana normally wants deliveries at home." in question
    assert refused.status_code == 422
    body = refused.content.decode()
    error = body.split('id="clarify_choice_error"')[1].split("</ul>")[0]
    assert "That option is no longer offered to you" in error
    assert MemoryVersion.objects.get(pk=held.pk).status == "held_unresolved"


def test_the_entities_page_offers_no_link_for_a_proposal_with_a_subject(
    demo: Demo, commit: Any
) -> None:
    activate_order_a(demo, commit)
    value = send_it_there(demo, commit)
    subject = held_dana(demo, commit)

    page = demo.client("rita").get("/entities/").content.decode()

    assert f"/memories/{subject.item_id}/link/" in page
    assert f"/memories/{value.item_id}/link/" not in page


def test_the_email_states_the_value_question_and_the_options_the_reader_may_see(
    demo: Demo, commit: Any
) -> None:
    activate_order_a(demo, commit)
    held = send_it_there(demo, commit)

    [email] = mail.outbox
    assert isinstance(email, EmailMultiAlternatives)
    html = str(email.alternatives[0][0])

    assert email.to == [demo.users["rita"].email]
    assert email.subject.startswith(f"[Memgov] Needs a value: {QUESTION}")
    assert 'Needs a subject: ""' not in email.subject
    assert f"Question: {QUESTION}" in email.body
    assert "“4 Dock Road” (from “Order order-a goes to Dana's office.”)" in email.body
    assert "“12 Elm Street” (from “Dana normally wants deliveries at home.”)" in email.body
    assert f"/memories/{held.item_id}/#question" in email.body
    assert "Which delivery address does “there” mean?" in html
    assert "not chosen yet: its question asks which value is meant" in email.body
    assert "null" not in email.body


def test_the_subject_question_email_keeps_its_words(demo: Demo, commit: Any) -> None:
    mail.outbox.clear()
    held_dana(demo, commit)

    [email] = mail.outbox

    assert 'Needs a subject: "Dana"' in email.subject
    assert "Question: Which entity does “Dana” mean?" in email.body


def test_the_memory_a_value_came_from_is_named_only_to_who_may_see_it(
    demo: Demo, commit: Any
) -> None:
    order_a = activate_order_a(demo, commit)
    held = send_it_there(demo, commit)
    rita = demo.client("rita")
    office = _option(rita.get(f"/memories/{held.item_id}/").content.decode(), "4 Dock Road")
    with commit():
        rita.post(f"/memories/{held.item_id}/clarify/", {"choice": office})
    MemoryVersion.objects.filter(item_id=order_a.item_id).update(
        visibility=["finance"], required_visibility=[["finance"]]
    )

    page = rita.get(f"/memories/{held.item_id}/").content.decode()

    status_line = page.split('id="status-line"')[1].split("</span>")[0]
    assert status_line == ">value clarified: “4 Dock Road”"
    assert (
        "Order order-a goes" not in page.split('class="page-head"')[1].split('id="evidence-h"')[0]
    )
