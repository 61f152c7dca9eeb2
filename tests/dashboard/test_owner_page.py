"""Issue 43, point 9: an owner has a start page. sam owns memories and reviews nothing:
he lands on "Your memories", which lists his memories that failed their checks, wait for
an answer, expire soon or ended, each with why in words and what to do; the correction
form asks for the value as the field catalog's schema says (a string is a text box)."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import pytest
from django import forms
from django.utils import timezone

from approvals import services
from dashboard.forms import CorrectionForm
from memory import catalog, entities, proposals
from memory.models import MemoryVersion, Source, Status
from tests.dashboard.support import Demo

ORDER_A = "Order order-a goes to Dana's office."


def _fail_order_a(demo: Demo, on_commit: Any) -> str:
    """rita adds a scenario that says order-a's fact must not apply to order-a, and
    approves: the gate checks fail, and sam, its owner, is the one to correct it."""
    rita = demo.principal("rita")
    item = demo.item("order_a")
    with on_commit(execute=True):
        services.scenario_add(
            principal=rita,
            item=item,
            data={
                "kind": "inapplicable",
                "context": {"task": "order-a"},
                "valid_at": None,
                "expect": "does_not_apply",
            },
        )
    with on_commit(execute=True):
        services.version_approve(principal=rita, item=demo.item("order_a"), comment="")
    assert demo.item("order_a").versions.get(number=1).status == Status.CHECKS_FAILED
    return item.pk


def _string_field(demo: Demo) -> None:
    catalog.field_define(
        principal=demo.principal("rita"),
        name="delivery_address",
        data={"value_schema": {"type": "string", "maxLength": 200}},
    )


def _section(body: str, key: str) -> str:
    found = re.search(rf'<section class="card owner-section" id="{key}".*?</section>', body, re.S)
    assert found is not None, f"no section {key}"
    return html.unescape(found.group(0))


def test_sam_lands_on_his_memories_and_reads_why_order_a_failed_and_what_to_do(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    memory_id = _fail_order_a(demo, django_capture_on_commit_callbacks)
    sam = demo.client("sam")

    start = sam.get("/", follow=True)

    assert start.redirect_chain == [("/mine/", 302)]
    body = start.content.decode()
    failed = _section(body, "failed")
    assert ORDER_A in failed
    assert (
        f"Why:</strong> “{ORDER_A}” failed its checks: a scenario added by rita says it must "
        "not apply where task is order-a, but agents asking there would be told it."
    ) in failed
    assert "Propose a correction" in failed
    assert f'href="/memories/{memory_id}/#correct"' in failed
    assert "mem_" not in re.sub(r'href="[^"]*"', "", failed)
    # The navigation leads here; the queue, which never asks sam anything, is not offered.
    assert '<a href="/mine/" aria-current="page">Your memories</a>' in body
    assert ">Queue</a>" not in body


def test_a_reviewer_still_starts_on_the_queue_and_is_told_of_her_own_memory(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    held = proposals.memory_propose(
        principal=demo.agent(),
        data={
            "kind": "preference",
            "subject_mention": "Dana",
            "field": "contact_channel",
            "value": "email",
            "statement": "Dana prefers to be contacted by email.",
            "scope": {},
            "owner": "rita",
            "expires_at": None,
            "sources": demo.item("dana_home").versions.get().source_ids,
        },
    )
    entities.entity_create(principal=demo.agent(), kind="customer", name="Dana Ortiz")
    assert held.status == Status.HELD_UNRESOLVED

    queue = demo.client("rita").get("/")
    mine = demo.client("rita").get("/mine/").content.decode()

    assert queue.status_code == 200
    assert '<a href="/mine/">A memory you own needs you</a>' in queue.content.decode()
    waiting = _section(mine, "held")
    assert "Dana prefers to be contacted by email." in waiting
    assert "Nobody can review it until that is answered." in waiting
    assert f'href="/memories/{held.item_id}/#subject"' in waiting


def test_expiring_and_retired_memories_say_when_and_why_in_words(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    MemoryVersion.objects.filter(item_id=demo.items["sarah_pune"]).update(
        expires_at=timezone.now() + timedelta(days=3, hours=1)
    )
    chat = Source.objects.get(pk=demo.item("dana_home").versions.get().source_ids[0])
    Source.objects.filter(pk=chat.pk).update(external_ref="CHAT-7")
    with django_capture_on_commit_callbacks(execute=True):
        services.source_revoke(
            principal=demo.principal("rita"), source=chat, reason="Dana withdrew it"
        )

    body = demo.client("sam").get("/mine/").content.decode()

    expiring = _section(body, "expiring")
    assert "Sarah moved to Pune in March." in expiring
    assert re.search(r"It expires on \d{4}-\d\d-\d\d at \d\d:\d\d \w+ \(in 3 days\)", expiring)
    ended = _section(body, "ended")
    assert "Dana normally wants deliveries at home." in ended
    assert "its source message CHAT-7 was revoked: Dana withdrew it." in ended
    assert "src_" not in body


def test_nothing_needs_an_owner_whose_memories_are_all_fine(demo: Demo) -> None:
    body = demo.client("lena").get("/mine/").content.decode()

    assert 'id="nothing-needs-you"' in body
    assert 'href="/browse/?owner=lena"' in body


def test_a_string_field_is_corrected_in_a_text_box_without_quotes(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    memory_id = _fail_order_a(demo, django_capture_on_commit_callbacks)
    _string_field(demo)
    sam = demo.client("sam")

    page = sam.get(f"/memories/{memory_id}/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        done = sam.post(
            f"/memories/{memory_id}/correct/",
            {
                "value": "4 Dock Road, Dana's office",
                "head_version": "1",
                "statement": "Order order-a goes to Dana's office, 4 Dock Road.",
                "scope": "task=order-a",
            },
        )

    assert re.search(
        r'<input type="text" name="value" value="4 Dock Road"[^>]*id="correct_value"', page
    )
    assert done.status_code == 302
    version = demo.item("order_a").versions.get(number=2)
    assert (version.value, version.status) == ("4 Dock Road, Dana's office", "pending_review")


def test_a_correction_of_a_version_that_changed_meanwhile_is_refused(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    memory_id = _fail_order_a(demo, django_capture_on_commit_callbacks)
    body = {
        "value": '"4 Dock Road"',
        "statement": "Order order-a goes to the office.",
        "scope": "task=order-a",
    }
    sam = demo.client("sam")
    with django_capture_on_commit_callbacks(execute=True):
        first = sam.post(f"/memories/{memory_id}/correct/", {**body, "head_version": "1"})
        again = sam.post(f"/memories/{memory_id}/correct/", {**body, "head_version": "1"})

    assert first.status_code == 302
    assert again.status_code == 409  # the form showed version 1; the head is now 2
    assert "Version 1 is not the head; the head is 2." in again.content.decode()
    assert demo.item("order_a").head_version == 2


def test_json_that_does_not_parse_is_refused_beside_the_field_and_kept(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    memory_id = _fail_order_a(demo, django_capture_on_commit_callbacks)
    # An address as text or as parts: a JSON box, where quotes matter.
    catalog.field_define(
        principal=demo.principal("rita"),
        name="delivery_address",
        data={"value_schema": {"type": ["string", "object"]}},
    )

    refused = demo.client("sam").post(
        f"/memories/{memory_id}/correct/",
        {"value": "{'street': 4 Dock Road", "head_version": "1", "statement": ORDER_A},
    )

    body = refused.content.decode()
    assert refused.status_code == 422
    assert "This is not JSON: expecting property name enclosed in double quotes at line 1" in body
    assert "{&#x27;street&#x27;: 4 Dock Road</textarea>" in body
    assert demo.item("order_a").head_version == 1


@pytest.mark.parametrize(
    ("schema", "widget", "typed", "value"),
    [
        ({"type": "string"}, forms.TextInput, "4 Dock Road", "4 Dock Road"),
        ({"type": "integer", "minimum": 0}, forms.NumberInput, "12", 12),
        ({"type": "number"}, forms.NumberInput, "2.5", 2.5),
        ({"type": "boolean"}, forms.CheckboxInput, "on", True),
        ({"enum": ["email", "phone", 3]}, forms.Select, "3", 3),
        ({"type": "object"}, forms.Textarea, '{"street": "Dock Road"}', {"street": "Dock Road"}),
        ({"type": "array"}, forms.Textarea, "[1, 2]", [1, 2]),
        (None, forms.Textarea, '"4 Dock Road"', "4 Dock Road"),
    ],
)
def test_the_value_box_follows_the_field_catalogs_schema(
    schema: Any, widget: type[forms.Widget], typed: str, value: Any
) -> None:
    form = CorrectionForm.for_schema(schema)(
        {"value": typed, "head_version": "1", "statement": "A sentence."}
    )

    assert type(form.fields["value"].widget) is widget
    assert form.is_valid(), form.errors
    assert form.cleaned_data["value"] == value


def test_an_unticked_boolean_is_false_and_a_number_field_refuses_words() -> None:
    boolean = CorrectionForm.for_schema({"type": "boolean"})(
        {"head_version": "1", "statement": "A sentence."}
    )
    number = CorrectionForm.for_schema({"type": "integer"})(
        {"value": "twelve", "head_version": "1", "statement": "A sentence."}
    )

    assert boolean.is_valid() and boolean.cleaned_data["value"] is False
    assert not number.is_valid() and number.errors["value"] == ["Enter a whole number."]
