"""The reviewer's story in a real browser, on the demo tenant (seeds 001 and 002)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memory.models import MemoryVersion
from tests.browser.conftest import Site, screenshot

pytestmark = pytest.mark.browser


def test_a_reviewer_finds_reads_approves_and_watches_the_checks_make_it_active(
    site: Site,
) -> None:
    memory_id = site.demo.items["order_a"]
    page = site.page()
    site.sign_in(page, "rita")
    queue = page.locator("table.queue")
    expect(queue).to_contain_text("Order order-a goes to Dana's office.")
    screenshot(page, "queue")

    page.get_by_role("link", name="Order order-a goes to Dana's office.").click()
    expect(page).to_have_url(f"{site.url}/memories/{memory_id}/")
    evidence = page.locator("section", has=page.get_by_role("heading", name="Evidence"))
    expect(evidence).to_contain_text("Order order-a: customer asked to deliver to the office")
    expect(evidence).to_contain_text("ORD-A v2")
    screenshot(page, "item_pending")

    page.get_by_label("Comment").fill("ORD-A v2 says the office.")
    page.get_by_role("button", name="Approve version 1").click()
    badge = page.locator(".page-head .badge")
    expect(page.get_by_role("status").first).to_contain_text("the scenario checks are running")
    expect(badge).to_have_text("checks running")
    expect(page.locator("#live progress")).to_be_visible()
    screenshot(page, "item_checking")

    with site.worker():
        expect(badge).to_have_text("active")  # the polled fragment reloads the page

    current = page.locator("#live details.checkrun.is-current summary")
    expect(current).to_contain_text("gate run of")
    expect(current).to_contain_text("under policy 1: 6 passed")
    expect(page.locator(".side-col")).not_to_contain_text("Approve version 1")
    screenshot(page, "item_active")
    assert MemoryVersion.objects.get(item_id=memory_id).status == "active"
