"""Issue 43, point 11, in a real browser: rita says in the field catalog that the order
service holds delivery addresses (a schema typed as a Python dict is refused beside the
field, her input kept; the JSON the table shows pastes back). From then on, the item,
subject and time-travel pages mark the address as memory only, naming the system."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from memory.models import FieldDefinition
from tests.browser.conftest import WAIT_MS, Site, screenshot
from tests.browser.test_accessibility import AXE, RUN_AXE

pytestmark = pytest.mark.browser
MARK = "Memory only — the system of record is Order service."
PYTHON_DICT = "{'type': 'string', 'minLength': 3}"
SCHEMA = {"type": "string", "minLength": 3}


def _page(site: Site) -> Any:
    """A page axe-core can be injected into (the CSP allows scripts from 'self' only)."""
    context = site.browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    site.contexts.append(context)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    return page


def _no_axe_violation(page: Any) -> None:
    page.add_script_tag(path=str(AXE))
    assert page.evaluate(RUN_AXE) == []


def test_an_address_the_order_service_holds_is_marked_memory_only_where_reviewers_decide(
    site: Site,
) -> None:
    page = _page(site)
    site.sign_in(page, "rita")
    page.goto(f"{site.url}/fields/")

    page.get_by_label("Field name").fill("delivery_address")
    page.get_by_label("Value schema").fill(PYTHON_DICT)
    page.get_by_label("Authoritative system").fill("Order service")
    page.get_by_label("Its tool name").fill("orders.get_order")
    page.get_by_role("button", name="Save field").click()

    error = page.locator("#id_value_schema_error")
    expect(error).to_contain_text("This is not JSON (line 1, column 2)")
    expect(page.get_by_label("Value schema")).to_have_value(PYTHON_DICT)
    expect(page.get_by_label("Authoritative system")).to_have_value("Order service")
    _no_axe_violation(page)
    screenshot(page, "fields_python_dict_refused_1280")
    assert not FieldDefinition.objects.filter(tenant=site.demo.tenant).exists()

    page.get_by_label("Value schema").fill(json.dumps(SCHEMA))
    page.get_by_role("button", name="Save field").click()
    expect(page.get_by_role("status").first).to_contain_text("Field delivery_address saved.")
    shown = page.locator("table pre.schema").first.inner_text()
    assert json.loads(shown) == SCHEMA and "\n" in shown  # JSON, indented
    page.get_by_role("link", name="delivery_address").click()
    expect(page.get_by_label("Value schema")).to_have_value(shown)  # as shown, pastes back
    page.get_by_role("button", name="Save field").click()
    expect(page.get_by_role("status").first).to_contain_text("Field delivery_address saved.")
    _no_axe_violation(page)
    screenshot(page, "fields_json_1280")

    page.goto(f"{site.url}/memories/{site.demo.items['order_a']}/")
    claim = page.locator("section", has=page.locator("#claim"))
    expect(claim.locator(".advisory-note")).to_have_text(MARK)
    expect(page.locator("#impact .advisory-note")).to_contain_text(
        "memory only — the system of record is Order service"
    )
    _no_axe_violation(page)
    screenshot(page, "item_advisory_1280")

    dana = site.demo.item("dana_home").subject_id
    page.goto(f"{site.url}/entities/{dana}/")
    row = page.locator("table.told-now tr", has_text="delivery_address")
    expect(row.locator(".advisory-note")).to_have_text(MARK)
    _no_axe_violation(page)
    screenshot(page, "subject_advisory_1280")

    page.goto(f"{site.url}/browse/?tt_subject={dana}&tt_context=task%3Dorder-b")
    fact = page.locator("tr", has_text="delivery_address").filter(has_text="12 Elm Street")
    expect(fact.locator(".advisory-note")).to_have_text(MARK)
    _no_axe_violation(page)
    screenshot(page, "time_travel_advisory_1280")
