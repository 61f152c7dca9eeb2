"""Issue 43, point 15: before publishing a policy, a dry run lists the memories in use that
the new precedence would fail (and so suspend or flag), and publishes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from approvals.services import version_approve
from memory.models import MemoryVersion, Policy, Status
from tests.browser.conftest import Site, open_until_active, screenshot

pytestmark = pytest.mark.browser


def _activate_both_material_check_rules(site: Site, page: Any) -> None:
    """The P-9 exception and the tenant-wide rule, in use side by side: the exception
    wins in P-9 only because the policy ranks specificity."""
    for key in ("p9_rule", "tenant_rule"):
        item = site.demo.item(key)
        for reviewer in ("rita", "lena"):
            if item.versions.get(number=item.head_version).status == Status.PENDING_REVIEW:
                version_approve(principal=site.demo.principal(reviewer), item=item, comment="ok")
    with site.worker():
        for key in ("p9_rule", "tenant_rule"):
            open_until_active(site, page, key)


def test_a_dry_run_names_the_exception_a_policy_without_specificity_would_fail(
    site: Site,
) -> None:
    page = site.page()
    site.sign_in(page, "rita")
    _activate_both_material_check_rules(site, page)
    published = Policy.objects.filter(tenant=site.demo.tenant).count()
    page.goto(f"{site.url}/policy/")

    page.get_by_label("Order").fill("kind, verification, valid_from")
    page.get_by_role("button", name="Dry run: what would this change?").click()

    result = page.locator("#dry-run")
    expect(result).to_contain_text("nothing was published")
    expect(result).to_contain_text(
        "Renewals of project P-9 with S-17, batch B-3, follow exception APR-2291."
    )
    expect(result).to_contain_text("take these out of use")
    expect(page.get_by_label("Order")).to_have_value("kind, verification, valid_from")
    screenshot(page, "policy_dry_run_rita")
    assert Policy.objects.filter(tenant=site.demo.tenant).count() == published
    p9 = site.demo.item("p9_rule")
    assert p9.versions.filter(status=Status.ACTIVE).count() == 1
    assert not MemoryVersion.objects.filter(status=Status.CHECKS_FAILED).exists()

    page.get_by_label("Order").fill("specificity, kind, verification, valid_from")
    page.get_by_role("button", name="Dry run: what would this change?").click()

    expect(result).to_contain_text("None would fail its checks")
