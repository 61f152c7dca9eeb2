"""In the browser: what a reviewer without authority sees, and a retirement that takes
effect for agents before the page answers."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from accounts import tenancy
from tests.browser.conftest import Site, screenshot

pytestmark = pytest.mark.browser


def _resolve(site: Site, page: Any, subject: str, context: dict[str, str]) -> dict[str, Any]:
    """What an agent is told, over the real HTTP API of the same server."""
    tenant = site.demo.tenant
    _, key = tenancy.api_key_create(tenant=tenant, agent_name="checker", labels=["staff"])
    response = page.request.post(
        f"{site.url}/api/v1/resolve",
        headers={"Authorization": f"Bearer {key}"},
        data={"subject": subject, "fields": ["delivery_address"], "context": context},
    )
    assert response.status == 200
    body: dict[str, Any] = response.json()
    return body


def test_a_reviewer_without_authority_neither_sees_the_item_nor_opens_it(site: Site) -> None:
    order_a = site.demo.items["order_a"]
    page = site.page()
    site.sign_in(page, "omar")

    queue = page.locator("table.queue")
    expect(queue).to_contain_text("Renewals of project P-9")
    expect(queue).not_to_contain_text("Order order-a goes to Dana's office.")
    screenshot(page, "queue_omar")

    response = page.goto(f"{site.url}/memories/{order_a}/")

    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    expect(page.locator("main")).not_to_contain_text("Dana's office")
    screenshot(page, "not_found_omar")


def test_retiring_from_the_item_page_stops_resolve_returning_it(site: Site) -> None:
    dana_home = site.demo.items["dana_home"]
    subject = str(site.demo.item("dana_home").subject_id)
    page = site.page()
    site.sign_in(page, "rita")
    before = _resolve(site, page, subject, {"task": "order-b"})
    assert [(f["memory_id"], f["value"]) for f in before["facts"]] == [(dana_home, "12 Elm Street")]

    page.goto(f"{site.url}/memories/{dana_home}/")
    page.get_by_text("Retire", exact=True).click()
    page.get_by_label("Reason").fill("Dana asked us to forget her home address.")
    page.get_by_role("button", name="Retire this memory").click()

    expect(page.get_by_role("status").first).to_contain_text(
        "Retired. Resolve no longer returns it."
    )
    expect(page.locator(".page-head .badge")).to_have_text("retired")
    screenshot(page, "item_retired")
    after = _resolve(site, page, subject, {"task": "order-b"})
    assert after["facts"] == []
    assert [(a["field"], a["reason"]) for a in after["abstentions"]] == [
        ("delivery_address", "no_applicable_fact")
    ]


@pytest.mark.parametrize("width", [1280, 1400])
def test_the_retire_form_stays_inside_its_card_with_every_choice_readable(
    site: Site, width: int
) -> None:
    dana_home = site.demo.items["dana_home"]
    page = site.page(width=width)
    site.sign_in(page, "rita")
    page.goto(f"{site.url}/memories/{dana_home}/")
    page.get_by_text("Retire", exact=True).click()

    card = page.locator("section.card", has=page.locator("summary", has_text="Retire")).first
    form = card.locator("form")
    box = card.bounding_box()
    assert box is not None
    visible = "label, legend, input:not([type=hidden]), textarea, button"
    for part in [form, *form.locator(visible).all()]:
        inner = part.bounding_box()
        assert inner is not None
        assert inner["x"] >= box["x"] - 0.5, part
        assert inner["x"] + inner["width"] <= box["x"] + box["width"] + 0.5, part
    # Both in-flight choices are read whole, nothing clipped, the safe one chosen.
    choices = form.get_by_role("group", name="Tasks that already used it")
    flag = choices.get_by_label("Flag them: they must re-verify before acting")
    expect(flag).to_be_checked()
    expect(choices.get_by_label("Leave them alone")).not_to_be_checked()
    for label in choices.locator("label").all():
        assert label.evaluate("el => el.scrollWidth <= el.clientWidth"), label
    screenshot(page, f"item_retire_form_{width}")
