"""Issue 37, point 6 in Chromium: rita filters her queue and saves the view, approves two
rows at once, and works the queue from the keyboard (j/k/a/r, from static/queue.js: the
CSP allows no inline script)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from audit.models import AuditEvent
from memory.models import MemoryVersion
from tests.browser.conftest import Site, screenshot

pytestmark = pytest.mark.browser

RULE = "Supplier material checks are required."
P9 = "Renewals of project P-9 with S-17, batch B-3, follow exception APR-2291."
ORDER = "Order order-a goes to Dana's office."


def _fits(page: Any) -> None:
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"{overflow}px of horizontal overflow"


def _rows(page: Any) -> Any:
    return page.locator("table.queue tbody tr[data-memory]")


def test_rita_filters_the_queue_saves_the_view_and_it_opens_that_way(site: Site) -> None:
    page = site.page(width=1400)
    site.sign_in(page, "rita")
    expect(_rows(page)).to_have_count(3)
    row = _rows(page).filter(has_text=ORDER)
    row.locator("details.row-more > summary").click()  # one line a row, the rest on demand
    expect(row.locator("[data-fact=subject]")).to_have_text("Dana Kim")
    expect(row.locator("[data-fact=owner]")).to_have_text("sam")
    screenshot(page, "queue_columns_1400")

    page.get_by_label("Kind").select_option("enterprise_rule")
    page.get_by_label("Sort").select_option("newest")
    page.get_by_role("button", name="Show").click()
    expect(_rows(page)).to_have_count(2)
    expect(page.locator("table.queue")).not_to_contain_text(ORDER)
    page.get_by_role("button", name="Save this view").click()
    expect(page.get_by_role("status").first).to_have_text(
        "View saved: the queue opens this way from now on."
    )

    page.goto(f"{site.url}/")
    expect(_rows(page)).to_have_count(2)
    expect(page.get_by_label("Kind")).to_have_value("enterprise_rule")
    expect(page.locator("#view-state")).to_have_text(
        "This is your saved view: the queue opens this way."
    )
    _fits(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    _fits(page)
    screenshot(page, "queue_saved_view_1280")


def test_rita_approves_two_ticked_rows_and_reads_one_line_for_each(site: Site) -> None:
    page = site.page(width=1280)
    site.sign_in(page, "rita")
    page.get_by_label(f"Select “{ORDER}”").check()
    page.get_by_label(f"Select “{RULE}”").check()
    page.get_by_label("Comment for each approval (optional)").fill("read the evidence")
    page.get_by_role("button", name="Approve selected").click()

    said = page.locator("ul.messages li")
    expect(said.nth(0)).to_have_text("Approved 2 of 2.")
    expect(said.nth(1)).to_contain_text(f"“{ORDER}”: Approved.")
    expect(said.nth(2)).to_contain_text(f"“{RULE}”: Approved (1 of 2).")
    expect(_rows(page)).to_have_count(1)
    expect(_rows(page).first).to_contain_text(P9)
    screenshot(page, "queue_bulk_approved_1280")
    for key in ("order_a", "tenant_rule"):
        memory_id = site.demo.items[key]
        assert AuditEvent.objects.filter(action="memory.approved", target_id=memory_id).count() == 1
    assert MemoryVersion.objects.get(item_id=site.demo.items["order_a"]).status == "checking"


def test_the_keys_move_approve_and_open_a_rejection(site: Site) -> None:
    page = site.page(width=1400)
    site.sign_in(page, "rita")
    rows = _rows(page)
    expect(rows).to_have_count(3)
    first = rows.nth(0).get_attribute("data-memory")
    second = rows.nth(1).get_attribute("data-memory")

    page.keyboard.press("j")
    expect(rows.nth(0)).to_have_class("current")
    page.keyboard.press("j")
    expect(rows.nth(1)).to_have_class("current")
    expect(rows.nth(0)).not_to_have_class("current")
    page.keyboard.press("k")
    expect(rows.nth(0)).to_have_class("current")
    screenshot(page, "queue_keys_current_1400")

    page.keyboard.press("a")
    expect(page.locator("ul.messages li").first).to_contain_text("Approved")
    expect(rows).to_have_count(2)
    assert MemoryVersion.objects.get(item_id=first).approvals.count() == 1
    assert MemoryVersion.objects.get(item_id=second).approvals.count() == 0

    page.keyboard.press("j")
    page.keyboard.press("r")
    expect(page).to_have_url(f"{site.url}/memories/{second}/#reject")
    expect(page.locator("#reject")).to_be_in_viewport()
    assert MemoryVersion.objects.get(item_id=second).status == "pending_review"


def test_approve_and_next_walks_the_queue(site: Site) -> None:
    page = site.page(width=1280)
    site.sign_in(page, "rita")
    first = _rows(page).nth(0).get_attribute("data-memory")
    second = _rows(page).nth(1).get_attribute("data-memory")
    page.goto(f"{site.url}/memories/{first}/")

    page.get_by_role("button", name="Approve and open the next").click()

    expect(page).to_have_url(f"{site.url}/memories/{second}/")
    expect(page.get_by_role("status").first).to_contain_text("Approved")
