"""Issue 15 in a real browser: the Impact panel says what agents will be told instead
(and which preference is outranked), and a held mention is found in the queue, linked on
its page and then reviewed like any other proposal."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from approvals import checking
from memory import proposals
from memory.models import MemoryVersion
from tests.browser.conftest import Site, screenshot
from tests.conftest import later

pytestmark = pytest.mark.browser
WIDTHS = (1400, 1280)


def _fits(page: Any) -> None:
    """Nothing wider than the window: no horizontal scrolling at this width."""
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"{overflow}px of horizontal overflow"


def test_the_impact_panel_names_the_outranked_preference_and_the_new_value(site: Site) -> None:
    memory_id = site.demo.items["order_a"]
    for width in WIDTHS:
        page = site.page(width=width)
        site.sign_in(page, "rita")
        page.goto(f"{site.url}/memories/{memory_id}/")

        impact = page.locator("#impact")
        own = impact.locator("article.impact-context.is-changed")
        expect(own).to_contain_text("task=order-a")
        expect(own.locator(".impact-pair > div").first).to_contain_text('"12 Elm Street"')
        expect(own.locator(".impact-pair > div").last).to_contain_text('"4 Dock Road"')
        expect(own.locator(".outranked")).to_contain_text("Dana normally wants deliveries at home.")
        expect(own.locator(".outranked")).to_contain_text('"12 Elm Street"')
        checks = page.locator("table.checks").first
        expect(checks.locator("a.ref").first).to_be_visible()
        _fits(page)
        impact.scroll_into_view_if_needed()
        screenshot(page, f"item_impact_{width}")


def test_a_held_mention_is_linked_from_the_queue_and_then_reviewed(site: Site) -> None:
    order = site.demo.item("order_a").versions.get().source_ids
    held = proposals.memory_propose(
        principal=site.demo.agent(),
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
    page = site.page(width=1400)
    site.sign_in(page, "rita")

    section = page.locator(".needs-subject-list")
    expect(section).to_contain_text("Needs a subject")
    expect(section).to_contain_text("“Dana”")
    _fits(page)
    screenshot(page, "queue_needs_subject_1400")
    section.get_by_role("link", name="Dana wants order-b delivered in the morning.").click()

    card = page.locator("#subject")
    expect(card).to_contain_text("Needs a subject: “Dana”")
    expect(card).to_contain_text("a word of its name")
    _fits(page)
    screenshot(page, "item_needs_subject_1400")
    page.set_viewport_size({"width": 1280, "height": 900})
    _fits(page)
    screenshot(page, "item_needs_subject_1280")

    card.get_by_label("Dana Kim").check()
    expect(card.locator("#link-effect")).to_contain_text("Linking sends it to review")
    card.get_by_label("Link it and send it to review").first.check()
    card.get_by_role("button", name="Link to this entity").click()

    expect(page.get_by_role("status").first).to_contain_text("Linked to Dana Kim")
    expect(page.locator(".page-head .badge")).to_have_text("waiting for review")
    expect(page.locator("#subject")).to_have_count(0)
    with site.worker():  # its first preview runs before Approve is offered (issue 43)
        page.get_by_label("Comment").fill("Dana Kim's order, per the call.")
        page.get_by_role("button", name="Approve version 1").click()
        expect(page.locator(".page-head .badge")).to_have_text("active")
    screenshot(page, "item_linked_active_1280")
    version = MemoryVersion.objects.get(item_id=held.item_id)
    assert (version.status, version.subject_id) == ("active", site.demo.item("order_a").subject_id)


def test_a_failed_check_says_why_in_one_sentence_and_names_memories_by_statement(
    site: Site,
) -> None:
    order = site.demo.item("order_a")
    wrong_case = {
        "kind": "inapplicable",
        "context": {"task": "order-c"},
        "expect": "does_not_apply",
    }
    version = proposals.memory_propose(
        principal=site.demo.agent(),
        data={
            "kind": "task_fact",
            "subject": str(order.subject_id),
            "field": "delivery_address",
            "value": "7 Quay Lane",
            "statement": "Order order-c goes to the Quay Lane depot.",
            "scope": {"task": "order-c"},
            "owner": "sam",
            "expires_at": later(7),
            "sources": order.versions.get().source_ids,
            "scenarios": [wrong_case],
        },
    )
    checking.preview(version.pk)  # what the preview task runs
    page = site.page(width=1400)
    site.sign_in(page, "rita")
    page.goto(f"{site.url}/memories/{version.item_id}/")

    failed = page.locator("table.checks tr.check-failed")
    expect(failed).to_have_count(1)
    expect(failed.locator(".why")).to_contain_text(
        "A scenario added from a real case says it must not apply in this context"
    )
    expect(failed.locator(".detail a.ref").first).to_contain_text("this version")
    expect(failed.locator(".detail a.ref").last).to_contain_text("Dana normally wants")
    impact = page.locator("#impact article.is-changed")
    expect(impact.locator(".outranked")).to_contain_text('"12 Elm Street"')
    _fits(page)
    failed.scroll_into_view_if_needed()
    screenshot(page, "item_failed_check_1400")
