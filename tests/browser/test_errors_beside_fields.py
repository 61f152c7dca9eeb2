"""Issue 43, point 10, walked as rita would: a refused form says why beside the field, in
words, and keeps what she typed or chose. The Add-scenario error was hidden in its
collapsed section; the entity typed for a held mention was lost after a link error; a
policy typo came back as an API-style banner ("Invalid content: precedence: …")."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from memory import proposals
from memory.models import Entity, MemoryVersion, Policy
from tests.browser.conftest import Site, screenshot
from tests.browser.test_accessibility import _violations
from tests.browser.test_value_question import _page
from tests.conftest import later

pytestmark = pytest.mark.browser


def _held(site: Site, mention: str) -> MemoryVersion:
    order = site.demo.item("order_a").versions.get().source_ids
    return proposals.memory_propose(
        principal=site.demo.agent(),
        data={
            "kind": "task_fact",
            "subject_mention": mention,
            "field": "delivery_window",
            "value": "mornings",
            "statement": f"{mention} wants order-b delivered in the morning.",
            "scope": {"task": "order-b"},
            "owner": "sam",
            "expires_at": later(7),
            "sources": order,
        },
    )


def _beside(page: Any, field: Any) -> Any:
    """The error the field names as its description (aria-describedby)."""
    described = field.get_attribute("aria-describedby") or ""
    ids = [i for i in described.split() if i.endswith("_error")]
    assert ids, f"the field names no error: {described!r}"
    return page.locator(f"#{ids[0]}")


def test_the_add_scenario_error_shows_beside_its_field_with_the_input_kept(site: Site) -> None:
    page = _page(site, 1280, 800)
    site.sign_in(page, "rita")
    page.goto(f"{site.url}/memories/{site.demo.items['order_a']}/")

    page.get_by_text("Add a scenario").click()
    context = page.get_by_label("Context")
    context.fill("project P-9")
    page.get_by_role("button", name="Add scenario").click()

    context = page.get_by_label("Context")
    expect(context).to_be_visible()
    expect(context).to_have_value("project P-9")
    error = _beside(page, context)
    expect(error).to_be_visible()
    expect(error).to_contain_text("“project P-9” is not dimension=value")
    assert _violations(page) == []
    context.scroll_into_view_if_needed()
    screenshot(page, "item_scenario_error_1280")


@pytest.mark.parametrize("where", ["item", "entities"])
def test_a_link_error_shows_beside_the_field_and_keeps_what_was_typed(
    site: Site, where: str
) -> None:
    held = _held(site, "Priya")  # no entity has this name: the reviewer types one
    page = _page(site, 1280, 800)
    site.sign_in(page, "rita")
    if where == "item":
        page.goto(f"{site.url}/memories/{held.item_id}/")
        form = page.locator(f"form[action='/memories/{held.item_id}/subject/']")
    else:
        page.goto(f"{site.url}/entities/")
        form = page.locator(f"form[action='/memories/{held.item_id}/link/']")

    form.locator("input[name=subject]").fill("Priya Customer")  # a name, not a listed entity
    form.locator("input[name=confirm]").check()
    form.get_by_role("button").click()

    field = form.locator("input[name=subject]")
    expect(field).to_have_value("Priya Customer")
    expect(form.locator("input[name=confirm]")).to_be_checked()
    error = _beside(page, field)
    expect(error).to_contain_text("No entity “Priya Customer” in this tenant.")
    expect(page.locator("main")).not_to_contain_text("Invalid content")
    assert _violations(page) == []
    screenshot(page, f"{where}_link_error_1280")
    assert not Entity.objects.filter(name="Priya Customer").exists()
    assert MemoryVersion.objects.get(pk=held.pk).status == "held_unresolved"


def test_a_policy_typo_shows_in_words_beside_its_list(site: Site) -> None:
    page = _page(site, 1280, 800)
    site.sign_in(page, "rita")
    page.goto(f"{site.url}/policy/")

    kinds = page.get_by_label("Kind rank")
    kinds.fill("task_fct, enterprise_rule, preference")
    page.locator("#policy_reason").fill("Tasks first")
    page.get_by_role("button", name="Publish and re-validate").click()

    kinds = page.get_by_label("Kind rank")
    expect(kinds).to_have_value("task_fct, enterprise_rule, preference")
    error = _beside(page, kinds)
    expect(error).to_contain_text("“task_fct” is not a kind Memgov knows. Check the spelling")
    main = page.locator("main")
    expect(main).not_to_contain_text("Invalid content")
    expect(main).not_to_contain_text("precedence.")
    assert _violations(page) == []
    kinds.scroll_into_view_if_needed()
    screenshot(page, "policy_typo_1280")
    assert Policy.objects.filter(tenant=site.demo.tenant).count() == 1
