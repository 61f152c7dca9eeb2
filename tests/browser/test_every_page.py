"""Every page in a real browser, with the live parts (htmx) doing their work; a
screenshot of each lands in var/screenshots/ for people to look at."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Site, screenshot
from tests.dashboard.support import demo_year

pytestmark = pytest.mark.browser


def test_the_sign_in_page_is_labelled_and_refuses_a_wrong_password(site: Site) -> None:
    page = site.page()
    page.goto(f"{site.url}/")

    expect(page).to_have_url(f"{site.url}/accounts/login/?next=/")
    page.get_by_label("Username").fill("rita")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Sign in").click()

    expect(page.get_by_role("alert")).to_have_text("That username and password do not match.")
    screenshot(page, "login")


def test_time_travel_shows_what_resolve_answered_with_its_reasons(site: Site) -> None:
    sarah = site.demo.item("sarah_pune")
    year = demo_year(site.demo)
    page = site.page()
    site.sign_in(page, "rita")
    page.get_by_role("link", name="Memory").click()

    page.get_by_label("Subject", exact=True).first.select_option(str(sarah.subject_id))
    page.get_by_label("Valid at (world time)").fill(f"{year}-04-15T12:00:00")
    page.get_by_role("button", name="Show the answer").click()

    answer = page.locator(".answer")
    expect(answer).to_contain_text("What resolve answers for Sarah Lee")
    expect(answer.locator("tbody tr")).to_have_count(1)
    expect(answer.locator("tbody tr")).to_contain_text("Pune")
    expect(answer.locator("tbody tr")).to_contain_text("only applicable fact")
    screenshot(page, "browse_time_travel")


def test_entities_audit_and_overview_pages(site: Site) -> None:
    page = site.page()
    site.sign_in(page, "rita")

    page.get_by_role("link", name="Entities").click()
    expect(page.locator("main")).to_contain_text("Northwind Metals")
    screenshot(page, "entities")

    page.get_by_role("link", name="Audit").click()
    page.get_by_role("button", name="Verify the chain").click()
    expect(page.locator("#verdict")).to_contain_text("The chain holds")
    screenshot(page, "audit")

    page.get_by_role("link", name="Overview").click()
    expect(page.get_by_role("img", name="Pending review by age", exact=False)).to_be_visible()
    screenshot(page, "overview")


def test_publishing_a_policy_shows_the_revalidation_progress_until_done(site: Site) -> None:
    page = site.page()
    site.sign_in(page, "rita")
    page.get_by_role("link", name="Policy").click()

    page.get_by_label("Kind rank").fill("enterprise_rule, task_fact, preference")
    page.get_by_label("Reason", exact=True).last.fill("rules outrank task facts")
    page.get_by_role("button", name="Publish and re-validate").click()
    expect(page.get_by_role("status").first).to_contain_text("Policy 2 published")
    job = page.locator(".job").first
    expect(job).to_contain_text("Re-checking active memories: 0 of 4")
    screenshot(page, "policy_revalidating")

    with site.worker():
        expect(job).to_contain_text("Done: 4 of 4 re-checked")

    expect(page.locator("main")).to_contain_text("Current: version 2")
    screenshot(page, "policy")


def test_the_queue_and_an_item_read_well_on_a_phone(site: Site) -> None:
    page = site.page(width=390, height=844)
    site.sign_in(page, "omar")
    expect(page.locator("table.queue")).to_contain_text("Renewals of project P-9")
    no_sideways_scroll = "document.documentElement.scrollWidth <= window.innerWidth"
    assert page.evaluate(no_sideways_scroll)
    screenshot(page, "phone_queue")

    page.get_by_role("link", name="Renewals of project P-9").click()
    expect(page.get_by_role("button", name="Approve version 1")).to_be_visible()
    assert page.evaluate(no_sideways_scroll)
    screenshot(page, "phone_item")


# Every page a person reaches, at 1400 and 1280 px (issue 37): a screenshot for people
# to look at (the run's artifact, var/screenshots/every_page_*.png) and no sideways
# scrolling.
PAGES = [
    ("queue", "rita", "/"),
    ("item_pending_rule", "rita", "/memories/{p9_rule}/"),
    ("item_active_preference", "rita", "/memories/{dana_home}/"),
    ("browse", "rita", "/browse/"),
    (
        "browse_time_travel",
        "rita",
        "/browse/?tt_subject={sarah_subject}&tt_context=&tt_valid_at={year}-04-15T12:00:00",
    ),
    ("entities", "rita", "/entities/"),
    ("audit", "rita", "/audit/"),
    ("policy", "rita", "/policy/"),
    ("overview", "rita", "/overview/"),
    ("queue_sam_no_audit_link", "sam", "/"),
    ("your_memories_sam", "sam", "/mine/"),
    ("entities_omar", "omar", "/entities/"),
    ("subject_dana", "rita", "/entities/{dana_subject}/"),
    ("not_found", "omar", "/memories/{order_a}/"),
    ("page_not_found", "rita", "/no-such-page/"),
    ("admin_memory_versions", "rita", "/admin/memory/memoryversion/"),
    ("admin_people", "rita", "/admin/auth/user/"),
]


@pytest.mark.parametrize("width", [1400, 1280])
@pytest.mark.parametrize(("name", "who", "path"), PAGES, ids=[p[0] for p in PAGES])
def test_every_page_fits_1400_and_1280_px_without_sideways_scrolling(
    site: Site, name: str, who: str, path: str, width: int
) -> None:
    demo = site.demo
    names = {key: demo.items[key] for key in ("p9_rule", "dana_home", "order_a")}
    address = path.format(
        **names,
        sarah_subject=demo.item("sarah_pune").subject_id,
        dana_subject=demo.item("dana_home").subject_id,
        year=demo_year(demo),
    )
    page = site.page(width=width, height=900)
    site.sign_in(page, who)

    page.goto(f"{site.url}{address}")

    admin = address.startswith("/admin/")
    if not admin:
        expect(page.locator("header.top .tenant")).to_have_text(demo.tenant.name)
    else:  # rita is the demo's tenant admin: her tenant's rows, in columns that fit
        expect(page.locator("#result_list")).to_be_visible()
        inside = "el => el.scrollWidth <= el.clientWidth"
        assert page.locator(".results").evaluate(inside), f"{name}: the list scrolls sideways"
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    screenshot(page, f"every_page_{name}" if width == 1400 else f"every_page_{name}_{width}")
    assert overflow <= 0, f"{name}: {overflow}px of sideways scroll"
    if who == "sam":
        expect(page.get_by_role("link", name="Audit")).to_have_count(0)
    # No raw ISO times (with microseconds) anywhere: times are formatted in the tenant's zone.
    text = page.locator("main").first.inner_text()
    assert admin or not re.search(r"\d{2}:\d{2}:\d{2}\.\d+|\d{4}-\d\d-\d\dT\d\d:", text), name
