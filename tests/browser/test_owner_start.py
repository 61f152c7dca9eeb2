"""Issue 43, point 9 in a real browser: sam owns memories and reviews nothing. He signs in
and lands on "Your memories", reads why order-a's memory failed its checks and what to
do, and corrects its address in a text box (the field catalog says it is a string): no
JSON, no quotes. axe-core finds no violation on either page."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from playwright.sync_api import expect

from approvals import services
from memory.models import MemoryVersion, Status
from tests.browser.conftest import Site, screenshot
from tests.browser.test_accessibility import _page_without_csp, _violations

pytestmark = pytest.mark.browser

ORDER_A = "Order order-a goes to Dana's office."


def _eventually(what: str, done: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.2)


def _order_a_fails_its_checks(site: Site) -> str:
    """rita adds a scenario saying order-a's fact must not apply to order-a, and
    approves it: the gate checks fail, and sam, its owner, must correct it. The field has
    no catalog entry, as in the demo: its value box follows the text it holds."""
    demo = site.demo
    rita = demo.principal("rita")
    services.scenario_add(
        principal=rita,
        item=demo.item("order_a"),
        data={
            "kind": "inapplicable",
            "context": {"task": "order-a"},
            "valid_at": None,
            "expect": "does_not_apply",
        },
    )
    services.version_approve(principal=rita, item=demo.item("order_a"), comment="")
    head = MemoryVersion.objects.filter(item_id=demo.items["order_a"], number=1)
    with site.worker():
        _eventually("the gate checks", lambda: head.get().status == Status.CHECKS_FAILED)
    return demo.items["order_a"]


def test_sam_lands_on_his_memories_and_corrects_the_address_in_a_text_box(site: Site) -> None:
    memory_id = _order_a_fails_its_checks(site)
    page = _page_without_csp(site)  # axe is injected below; the pages are served as ever

    site.sign_in(page, "sam")

    expect(page).to_have_url(f"{site.url}/mine/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Your memories")
    expect(
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Queue")
    ).to_have_count(0)
    failed = page.locator("#failed")
    expect(failed.get_by_role("heading", level=2)).to_contain_text("Failed their checks")
    expect(failed).to_contain_text(ORDER_A)
    expect(failed).to_contain_text(
        f"Why: “{ORDER_A}” failed its checks: a scenario added by rita says it must not apply "
        "where task is order-a, but agents asking there would be told it."
    )
    expect(failed).to_contain_text("What to do: Propose a correction")
    assert "mem_" not in page.locator("main").inner_text()
    screenshot(page, "owner_your_memories_1280")
    assert _violations(page) == []

    failed.get_by_role("link", name=re.compile(r"^Correct it\b.*order-a")).click()

    expect(page).to_have_url(f"{site.url}/memories/{memory_id}/#correct")
    correct = page.locator("#correct")
    value = correct.get_by_label("Value")
    expect(value).to_have_attribute("type", "text")
    expect(value).to_have_value("4 Dock Road")  # the text itself: no quotes, no JSON
    expect(correct).to_contain_text("Type the text as it is, without quotes.")
    assert _violations(page) == []
    value.fill("4 Dock Road, 2nd floor")
    correct.get_by_label("Statement").fill("Order order-a goes to Dana's office, 2nd floor.")
    screenshot(page, "owner_correction_text_box_1280")
    correct.get_by_role("button", name="Propose version 2").click()

    expect(page.get_by_role("status").first).to_contain_text("Correction proposed as version 2")
    version = MemoryVersion.objects.get(item_id=memory_id, number=2)
    assert (version.value, version.status) == ("4 Dock Road, 2nd floor", Status.PENDING_REVIEW)

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Your memories").click()
    expect(page.locator("#failed")).to_have_count(0)  # corrected: nothing failed is left
    screenshot(page, "owner_your_memories_after_correction_1280")
