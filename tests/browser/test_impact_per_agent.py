"""Issue 43, point 5, in a real browser: the Impact panel of the tenant-wide rule says whose
view each part is, shows the P-9 exception to the agent holding ``staff`` and the rule to
an agent without it, and each key is told by resolve, over the real HTTP API, what the
panel said: now, and after the rule is active."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from playwright.sync_api import expect

from accounts import tenancy
from approvals.services import version_approve
from memory.models import Status
from tests.browser.conftest import WAIT_MS, Site, open_until_active, screenshot
from tests.browser.test_accessibility import AXE, RUN_AXE

pytestmark = pytest.mark.browser
P9 = {"project": "P-9", "supplier": "S-17", "batch": "B-3"}


def _approve_and_wait(site: Site, page: Any, key: str) -> None:
    item = site.demo.item(key)
    for reviewer in ("rita", "lena"):
        version_approve(principal=site.demo.principal(reviewer), item=item, comment="ok")
    with site.worker():
        open_until_active(site, page, key)
    assert item.versions.get().status == Status.ACTIVE


def _resolve(site: Site, page: Any, raw: str, subject: str, context: dict[str, str]) -> Any:
    """The value resolve gives this key for material_checks, as JSON; None: no answer."""
    response = page.request.post(
        f"{site.url}/api/v1/resolve",
        headers={"Authorization": f"Bearer {raw}"},
        data={"subject": subject, "fields": ["material_checks"], "context": context},
    )
    assert response.status == 200, response.text()
    facts = response.json()["facts"]
    return json.dumps(facts[0]["value"]) if facts else None


def _panel(page: Any) -> list[tuple[list[str], dict[str, tuple[Any, Any]]]]:
    """Per view: the key prefixes it names, and per context what it says agents are told
    now and after activation (the value as JSON; None: no answer)."""
    views = []
    for view in page.locator("#impact .impact-view").all():
        prefixes = re.findall(r"\(key ([0-9a-f]+)…\)", view.locator(".impact-whose").inner_text())
        said: dict[str, tuple[Any, Any]] = {}
        for article in view.locator("article.impact-context").all():
            where = "P-9" if "P-9" in article.locator("h3").inner_text() else "own"
            pair = article.locator(".impact-pair > div")
            told = []
            for side in (pair.first, pair.last):
                value = side.locator("code.val")
                told.append(value.inner_text() if value.count() else None)
            said[where] = (told[0], told[1])
        views.append((prefixes, said))
    return views


def test_the_impact_panel_shows_each_agents_view_and_resolve_agrees_for_every_key(
    site: Site,
) -> None:
    demo_key = (Path(settings.VAR_DIR) / "demo-agent-key").read_text().strip()
    _, intake = tenancy.api_key_create(tenant=site.demo.tenant, agent_name="intake", labels=[])
    keys = {raw.split("_")[1]: raw for raw in (demo_key, intake)}
    rule = site.demo.item("tenant_rule")
    subject = str(rule.subject_id)
    context = site.browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    site.contexts.append(context)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    site.sign_in(page, "rita")
    _approve_and_wait(site, page, "p9_rule")

    page.goto(f"{site.url}/memories/{rule.pk}/")

    impact = page.locator("#impact")
    expect(impact).to_contain_text("Agents holding different labels are told different things")
    whose = impact.locator(".impact-whose")
    expect(whose).to_have_count(2)
    expect(whose.first).to_contain_text("As agents with no label see it.")
    expect(whose.first).to_contain_text("intake (key")
    expect(whose.last).to_contain_text("As agents with the label staff see it.")
    expect(whose.last).to_contain_text("assistant (key")
    staff_p9 = impact.locator(".impact-view").last.locator("article", has_text="P-9")
    expect(staff_p9.locator(".impact-pair > div").first).to_contain_text(
        "follow exception APR-2291"
    )
    page.add_script_tag(path=str(AXE))
    assert page.evaluate(RUN_AXE) == []
    impact.scroll_into_view_if_needed()
    screenshot(page, "item_impact_per_agent_1280")
    panel = _panel(page)
    assert sorted(p for prefixes, _ in panel for p in prefixes) == sorted(keys)
    contexts = {"own": {}, "P-9": P9}

    now = {
        (prefix, where): (said[where][0], _resolve(site, page, keys[prefix], subject, ctx))
        for prefixes, said in panel
        for prefix in prefixes
        for where, ctx in contexts.items()
    }
    assert all(panel_says == resolve_says for panel_says, resolve_says in now.values()), now
    [staff] = [said for prefixes, said in panel if demo_key.split("_")[1] in prefixes]
    [none] = [said for prefixes, said in panel if intake.split("_")[1] in prefixes]
    assert staff["P-9"] == ('"follow exception APR-2291"', '"follow exception APR-2291"')
    assert none["P-9"] == (None, '"required"')

    _approve_and_wait(site, page, "tenant_rule")
    after = {
        (prefix, where): (said[where][1], _resolve(site, page, keys[prefix], subject, ctx))
        for prefixes, said in panel
        for prefix in prefixes
        for where, ctx in contexts.items()
    }
    assert all(panel_says == resolve_says for panel_says, resolve_says in after.values()), after
