"""Issue 43, points 7 and 8, walked as rita would in Chromium.

7. The queue is scanned, not read: with 15 proposals waiting, at least 10 rows sit above
   the fold at 1280x800 (before: 3, each 106-203 px tall), every row one line (the
   statement; kind, scope and checks as chips), the rest of a row on demand. Ticking, the
   keys and "approve despite" for a failed preview work as before.
8. The refresh never loses input: a typed bulk comment, a filter chosen but not applied,
   the focus and an opened row stay while new rows arrive; while a row is ticked the rows
   stop updating, and the page says so.

The timer under test is the page's own: the page is served with a one-second interval
(``dashboard.queue.REFRESH_SECONDS``), so nothing waits 30 s."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from approvals import checking
from dashboard import queue
from memory import proposals
from memory.models import MemoryVersion
from tests.browser.conftest import SCREENSHOTS, Site
from tests.browser.test_failures_ties_and_scenarios import (
    ORDER,
    _failing_order_a,
    _no_axe_violations,
    _page,
)
from tests.browser.test_reviewer_day import _held_preference
from tests.conftest import later

pytestmark = pytest.mark.browser

PROPOSED = 12  # besides the demo's three
ONE_LINE_PX = 44  # a row of one line of text and its padding; two lines would be 60+
IN_VIEW = """() => Array.from(document.querySelectorAll('table.queue tr[data-memory]'))
  .filter(r => { const b = r.getBoundingClientRect();
                 return b.top >= 0 && b.bottom <= window.innerHeight; }).length"""
HEIGHTS = """() => Array.from(document.querySelectorAll('table.queue tr[data-memory]'))
  .map(r => Math.round(r.getBoundingClientRect().height))"""
COMMENT = "Read against ORD-A v2."


def _fits(page: Any) -> None:
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"{overflow}px of horizontal overflow"


def _fold(page: Any, name: str) -> None:
    """What the reviewer sees without scrolling (the fold is the point here)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def _propose(site: Site, n: int) -> MemoryVersion:
    """The agent heard one more order's delivery window (order-1nn), with its evidence."""
    order = site.demo.item("order_a")
    start, end = 8 + n % 6, 11 + n % 6
    version = proposals.memory_propose(
        principal=site.demo.agent(),
        data={
            "kind": "task_fact",
            "subject": str(order.subject_id),
            "field": "delivery_window",
            "value": f"{start}-{end}",
            "statement": f"Order order-{100 + n} is delivered between {start} and {end} "
            "o'clock, as the customer asked on the phone when the order was confirmed.",
            "scope": {"task": f"order-{100 + n}"},
            "owner": "sam",
            "expires_at": later(7),
            "sources": order.versions.get(number=1).source_ids,
        },
    )
    checking.preview(version.pk)  # as the worker does when it enters review
    return version


def _rows(page: Any) -> Any:
    return page.locator("table.queue tr[data-memory]")


def _row(page: Any, memory_id: str) -> Any:
    return page.locator(f"tr[data-memory='{memory_id}']")


# --- point 7 ---------------------------------------------------------------------------


@pytest.mark.parametrize(("width", "height", "at_least"), [(1280, 800, 10), (1440, 900, 12)])
def test_at_least_ten_one_line_rows_sit_above_the_fold_with_details_on_demand(
    site: Site, width: int, height: int, at_least: int
) -> None:
    failing = _failing_order_a(site)  # its row carries the "approve despite" box
    made = [_propose(site, n) for n in range(PROPOSED)]
    _held_preference(site)  # an open question: it must not push the rows down
    page = _page(site, width=width, height=height)
    site.sign_in(page, "rita")
    expect(_rows(page)).to_have_count(PROPOSED + 3)
    expect(page.locator("#held-notice")).to_contain_text("An open question waits")

    in_view = page.evaluate(IN_VIEW)
    heights = page.evaluate(HEIGHTS)
    _fold(page, f"queue_fold_{width}x{height}")
    assert in_view >= at_least, f"{in_view} rows above the fold at {width}x{height}"
    assert max(heights) <= ONE_LINE_PX, heights
    _fits(page)

    # The statement is the row's text; kind, scope and checks are chips beside it.
    row = _row(page, made[0].item_id)
    expect(row.get_by_role("link", name=made[0].statement)).to_be_visible()
    expect(row.locator("td[data-label=Kind] .chip")).to_have_text("task fact")
    expect(row.locator("td[data-label=Scope] .chip")).to_have_text("task=order-100")
    expect(row.locator("td[data-label='Preview checks']")).to_contain_text("passed")
    p9 = _row(page, site.demo.items["p9_rule"]).locator("td[data-label=Scope]")
    expect(p9.locator(".chip")).to_have_count(2)  # one pair, and "+2" for the others
    expect(p9.locator(".chip.more")).to_contain_text("+2")
    failed = _row(page, failing)
    expect(failed.locator("td[data-label='Preview checks']")).to_contain_text("1 of 7 failed")
    expect(failed.get_by_label(f"Approve “{ORDER}” despite its failed preview")).to_be_visible()

    # The rest of a row on demand, where it is: subject, value, owner, approvals, scope.
    facts = row.locator(".row-facts")
    expect(facts).not_to_be_visible()
    row.locator("details.row-more > summary").click()
    expect(facts).to_be_visible()
    expect(facts.locator("[data-fact=subject]")).to_have_text("Dana Kim")
    expect(facts.locator("[data-fact=value]")).to_have_text("8-11")
    expect(facts.locator("[data-fact=field]")).to_have_text("delivery_window")
    expect(facts.locator("[data-fact=owner]")).to_have_text("sam")
    expect(facts.locator("[data-fact=approved]")).to_have_text("nobody yet (1 needed)")
    p9_facts = _row(page, site.demo.items["p9_rule"]).locator(".row-facts [data-fact=scope]")
    expect(p9_facts.locator(".chip")).to_have_count(3)
    _no_axe_violations(page)
    _fits(page)
    _fold(page, f"queue_row_details_{width}x{height}")


def test_the_keys_tick_and_open_details_and_approve_despite_still_confirms(site: Site) -> None:
    failing = _failing_order_a(site)
    made = [_propose(site, n) for n in range(PROPOSED)]
    page = _page(site, width=1280, height=800)
    site.sign_in(page, "rita")
    rows = _rows(page)

    page.keyboard.press("j")
    expect(rows.nth(0)).to_have_class("current")
    page.keyboard.press("d")
    expect(rows.nth(0).locator(".row-facts")).to_be_visible()
    page.keyboard.press("d")
    expect(rows.nth(0).locator(".row-facts")).not_to_be_visible()
    page.keyboard.press("j")
    expect(rows.nth(1)).to_have_class("current")
    ticked = rows.nth(1).locator("input[name=memory]")
    page.keyboard.press("x")
    expect(ticked).to_be_checked()
    page.keyboard.press("x")
    expect(ticked).not_to_be_checked()

    # Bulk approve leaves the failed preview out unless its own box is ticked.
    page.get_by_label(f"Select “{made[0].statement[:59]}…”").check()
    _row(page, failing).get_by_label(f"Select “{ORDER}”").check()
    page.get_by_role("button", name="Approve selected").click()
    said = page.locator("ul.messages li")
    expect(said.nth(0)).to_have_text("Approved 1 of 2. Left out 1 whose preview failed.")
    _row(page, failing).get_by_label(f"Approve “{ORDER}” despite its failed preview").check()
    _row(page, failing).get_by_label(f"Select “{ORDER}”").check()
    page.get_by_role("button", name="Approve selected").click()
    expect(said.nth(0)).to_contain_text(f"“{ORDER}”: Approved.")
    expect(_row(page, failing)).to_have_count(0)


# --- point 8 ---------------------------------------------------------------------------


def test_the_refresh_brings_new_rows_and_keeps_the_comment_the_filter_and_the_focus(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queue, "REFRESH_SECONDS", 1)
    page = _page(site, width=1280, height=800)
    site.sign_in(page, "rita")
    expect(_rows(page)).to_have_count(3)

    kind = page.get_by_label("Kind")
    kind.select_option("enterprise_rule")  # chosen, not applied
    comment = page.get_by_label("Comment for each approval (optional)")
    comment.fill(COMMENT)
    first = _propose(site, 0)
    expect(_row(page, first.item_id)).to_be_visible()  # the refresh brought it
    expect(_rows(page)).to_have_count(4)  # the filter still waits for "Show"
    expect(comment).to_have_value(COMMENT)
    expect(comment).to_be_focused()
    expect(kind).to_have_value("enterprise_rule")
    note = page.locator("#queue-refresh")
    expect(note).to_have_text("Rows update every 1 s; your comment and filters stay.")

    # The open questions refresh beside the rows.
    held = _held_preference(site)
    expect(page.locator(".needs-subject-list")).to_contain_text(held.statement)

    # The focus on a row and an opened row survive a refresh too.
    page.locator("h1").click()
    page.keyboard.press("j")
    page.keyboard.press("d")
    top = _rows(page).nth(0)
    expect(top.locator("a.strong")).to_be_focused()
    second = _propose(site, 1)
    expect(_row(page, second.item_id)).to_be_visible()
    expect(top).to_have_class("current")
    expect(top.locator("a.strong")).to_be_focused()
    expect(top.locator(".row-facts")).to_be_visible()
    _no_axe_violations(page)
    _fold(page, "queue_refreshed_keeps_input_1280x800")

    # A ticked row stops the updates, and the page says so; unticking resumes them.
    page.keyboard.press("x")
    expect(note).to_have_text("Rows stop updating while any is ticked.")
    third = _propose(site, 2)
    page.wait_for_timeout(3_000)  # three intervals: the rows would have been swapped
    expect(_row(page, third.item_id)).to_have_count(0)
    expect(top.locator("input[name=memory]")).to_be_checked()
    page.keyboard.press("x")
    expect(note).to_have_text("Rows update every 1 s; your comment and filters stay.")
    expect(_row(page, third.item_id)).to_be_visible()
    expect(comment).to_have_value(COMMENT)
    expect(kind).to_have_value("enterprise_rule")

    page.get_by_role("button", name="Show").click()  # now the filter applies
    expect(_rows(page)).to_have_count(2)


@pytest.mark.parametrize("width", [900, 390])
def test_on_a_narrow_screen_rows_wrap_instead_of_cutting_and_nothing_overflows(
    site: Site, width: int
) -> None:
    made = _propose(site, 0)
    page = _page(site, width=width, height=800)
    site.sign_in(page, "rita")
    row = _row(page, made.item_id)
    link = row.get_by_role("link", name=made.statement)
    expect(link).to_be_visible()
    assert link.evaluate("a => a.scrollWidth <= a.clientWidth")  # the whole statement shows
    row.locator("details.row-more > summary").click()
    expect(row.locator("[data-fact=owner]")).to_have_text("sam")
    _fits(page)
    page.screenshot(path=str(SCREENSHOTS / f"queue_narrow_{width}.png"), full_page=True)
