"""Issue 37, point 5 in Chromium: a preference that would tie with the one agents are told
now says so in red, and rita replaces the older one in one step (``memory_replace``: the
recheck and the retirement, authority-checked and audited, in one transaction)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from audit.models import AuditEvent
from memory import proposals
from memory.models import MemoryVersion
from tests.browser.conftest import Site, screenshot

pytestmark = pytest.mark.browser


def _tied_preference(site: Site) -> MemoryVersion:
    home = site.demo.item("dana_home").versions.get()
    return proposals.memory_propose(
        principal=site.demo.agent(),
        data={
            "kind": "preference",
            "subject": home.subject_id,
            "field": "delivery_address",
            "value": "7 Pier Lane",
            "statement": "Dana now wants deliveries at 7 Pier Lane.",
            "scope": {},
            "owner": "sam",
            "expires_at": None,
            "sources": home.source_ids,
        },
    )


def _red(page: Any, selector: str) -> bool:
    colour = page.eval_on_selector(selector, "e => getComputedStyle(e).backgroundColor")
    red, green, blue = (int(x) for x in colour[colour.index("(") + 1 : -1].split(",")[:3])
    return red > green and red > blue


def test_a_tie_shows_in_red_and_rita_activates_the_new_one_retiring_the_older(
    site: Site,
) -> None:
    new = _tied_preference(site)
    older_id = site.demo.items["dana_home"]
    page = site.page(width=1280)
    site.sign_in(page, "rita")
    with site.worker():  # the gate checks fail on the tie
        page.goto(f"{site.url}/memories/{new.item_id}/")
        expect(page.locator(".page-head .badge")).to_have_text("checks failed")
    page.reload()

    tie = page.locator("#impact .would-tie")
    expect(tie.locator("h4")).to_have_text("Would tie with")
    expect(tie).to_contain_text("Dana normally wants deliveries at home.")
    expect(page.locator("#impact")).not_to_contain_text("Becomes outranked")
    assert _red(page, "#impact .would-tie")
    screenshot(page, "item_would_tie_1280")
    page.set_viewport_size({"width": 1400, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(page, "item_would_tie_1400")
    page.set_viewport_size({"width": 1280, "height": 900})

    with site.worker():
        tie.get_by_role("button", name="Activate this and retire the older one").click()
        expect(page.get_by_role("status").first).to_have_text(
            "Retired “Dana normally wants deliveries at home.”. "
            "This version's checks are running again, without the tie; "
            "it becomes active when they pass."
        )
        expect(page.locator(".page-head .badge")).to_have_text("active")
    assert MemoryVersion.objects.get(item_id=older_id).status == "retired"
    assert AuditEvent.objects.filter(target_id=older_id, actor="user:rita").exists()
    assert AuditEvent.objects.filter(target_id=new.item_id, actor="user:rita").exists()
    screenshot(page, "item_tie_replaced_1280")
