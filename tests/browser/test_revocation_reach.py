"""Issue 43, point 13: before a reviewer revokes a source, the confirmation lists every
memory the revocation will retire, not only the one whose page they are on."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from accounts import tenancy
from core.principals import Principal
from memory import proposals
from memory.models import MemoryVersion
from tests.browser.conftest import Site, screenshot
from tests.conftest import later

pytestmark = pytest.mark.browser


def _cite(site: Site, source: str, statement: str, **extra: Any) -> MemoryVersion:
    order = site.demo.item("order_a")
    return proposals.memory_propose(
        principal=extra.pop("by", site.demo.agent()),
        data={
            "kind": "task_fact",
            "subject": str(order.subject_id),
            "field": extra.pop("field", "delivery_window"),
            "value": "mornings",
            "statement": statement,
            "scope": {"task": "order-a"},
            "owner": "sam",
            "expires_at": later(7),
            "sources": [source],
            **extra,
        },
    )


def test_the_revoke_confirmation_lists_every_memory_the_source_backs(site: Site) -> None:
    order = site.demo.item("order_a")
    source = order.versions.get().source_ids[0]
    _cite(site, source, "Order order-a is delivered in the morning.")
    tenancy.api_key_create(tenant=site.demo.tenant, agent_name="ledger", labels=["finance"])
    ledger = Principal(tenant=site.demo.tenant, name="agent:ledger", labels=frozenset({"finance"}))
    _cite(
        site,
        source,
        "Order order-a is billed to the finance desk.",
        field="billing_desk",
        visibility=["finance"],
        by=ledger,
    )
    page = site.page()
    site.sign_in(page, "rita")

    page.goto(f"{site.url}/memories/{order.pk}/")
    page.get_by_text("Revoke this source…").click()

    reach = page.locator("ul.reach")
    expect(reach).to_contain_text("Order order-a goes to Dana's office.")
    expect(reach).to_contain_text("Order order-a is delivered in the morning.")
    expect(reach).to_contain_text("and 1 memory you may not see")
    expect(reach).not_to_contain_text("finance desk")
    screenshot(page, "revoke_reach_rita")
