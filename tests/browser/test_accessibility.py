"""Issue 37: axe-core (vendored in tests/browser/vendor/) finds no violation on any
dashboard page, at 1280 px, for rita (who sees every page) and sam (who reviews nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import WAIT_MS, Site
from tests.browser.test_no_raw_ids import pages

pytestmark = pytest.mark.browser

AXE = Path(__file__).parent / "vendor" / "axe.min.js"
RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.map(v => `${v.id} (${v.impact}): ${v.help} at ` +
    v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', '));
}"""


def _page_without_csp(site: Site) -> Any:
    """axe is injected as a script the page's CSP (scripts from 'self' only) would refuse:
    this context alone bypasses it; the pages themselves are served unchanged."""
    context = site.browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    site.contexts.append(context)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    return page


def _violations(page: Any) -> list[str]:
    page.add_script_tag(path=str(AXE))
    return list(page.evaluate(RUN_AXE))


@pytest.mark.parametrize("person", ["rita", "sam"])
def test_every_dashboard_page_has_no_axe_violation(site: Site, person: str) -> None:
    page = _page_without_csp(site)
    site.sign_in(page, person)
    found: dict[str, list[str]] = {}
    for path in pages(site):
        response = page.goto(f"{site.url}{path}")
        if response is None or response.status == 404:
            continue  # not sam's to open
        violations = _violations(page)
        if violations:
            found[path] = violations
    page.goto(f"{site.url}/accounts/login/")
    assert found == {}
