"""Issue 43, point 1, walked as rita would: an agent proposed "Order order-b goes where the
customer said" with the value "there". The queue's open questions say what it asks; its
page shows the question and the addresses rita may see, each with the memory it comes
from; she answers there and the page says, in words, what was chosen. The Entities page
does not offer to link it (it has a subject). axe-core finds nothing on the way."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from approvals import checking, services
from memory import proposals
from memory.models import MemoryVersion
from tests.browser.conftest import WAIT_MS, Site, screenshot
from tests.browser.test_accessibility import _violations
from tests.conftest import later

pytestmark = pytest.mark.browser
QUESTION = "Which delivery address does “there” mean?"
OFFICE_SAID = "Order order-a goes to Dana's office."


def _fits(page: Any) -> None:
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"{overflow}px of horizontal overflow"


def _page(site: Site, width: int, height: int) -> Any:
    """A page axe can be injected into (its script would be refused by the CSP)."""
    context = site.browser.new_context(viewport={"width": width, "height": height}, bypass_csp=True)
    site.contexts.append(context)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    return page


def send_it_there(site: Site) -> MemoryVersion:
    """order-a's office address is in use (rita approved it, its checks passed); then the
    agent proposes order-b with the value "there"."""
    demo = site.demo
    order = demo.item("order_a")
    approved = services.version_approve(
        principal=demo.principal("rita"), item=order, comment="per the order"
    )
    checking.gate(approved.pk)
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


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (1440, 900)])
def test_a_value_question_is_read_and_answered_in_the_dashboard(
    site: Site, width: int, height: int
) -> None:
    held = send_it_there(site)
    order_a = site.demo.items["order_a"]
    page = _page(site, width, height)
    site.sign_in(page, "rita")

    questions = page.locator(".needs-subject-list")
    expect(questions).to_contain_text("Open questions")
    expect(questions).to_contain_text(f"Needs a value: {QUESTION}")
    expect(questions).not_to_contain_text("mentions “”")
    _fits(page)
    assert _violations(page) == []
    screenshot(page, f"queue_value_question_{width}")

    page.goto(f"{site.url}/entities/")
    expect(page.locator(f"form[action='/memories/{held.item_id}/link/']")).to_have_count(0)

    page.goto(f"{site.url}/")
    questions.get_by_role("link", name="Order order-b goes where the customer said.").click()
    card = page.locator("#question")
    expect(card.get_by_role("heading")).to_have_text(f"Needs a value: {QUESTION}")
    expect(page.locator("#claim + dl")).to_contain_text("not given yet: the agent said “there”")
    office = card.locator(".value-option", has_text="4 Dock Road")
    expect(office.get_by_role("link", name=OFFICE_SAID)).to_have_attribute(
        "href", f"/memories/{order_a}/"
    )
    expect(card.locator(".value-option", has_text="12 Elm Street")).to_contain_text(
        "Dana normally wants deliveries at home."
    )
    _fits(page)
    assert _violations(page) == []
    card.scroll_into_view_if_needed()
    screenshot(page, f"item_value_question_{width}")

    office.get_by_label("“4 Dock Road”").check()
    card.get_by_role("button", name="Answer with this value").click()

    chosen = f"value clarified: “4 Dock Road”, from “{OFFICE_SAID}”"
    expect(page.get_by_role("status").first).to_contain_text(chosen)
    expect(page.locator("#status-line")).to_have_text(chosen)
    expect(page.locator(".page-head .badge")).to_have_text("waiting for review")
    expect(page.locator("#question")).to_have_count(0)
    expect(page.locator("main")).not_to_contain_text("opt_")
    _fits(page)
    assert _violations(page) == []
    screenshot(page, f"item_value_answered_{width}")
    version = MemoryVersion.objects.get(pk=held.pk)
    assert (version.status, version.value) == ("pending_review", "4 Dock Road")
