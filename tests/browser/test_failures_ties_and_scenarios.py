"""Issue 43, points 2, 3, 4 and 6 in Chromium, walked as the reviewer would:

2. approving a version whose preview failed asks to confirm the failures it names, on
   its page, in bulk and with the ``a`` key;
3. a tie puts "Activate this and retire the older one" where Approve is, its sentence
   says "ties with <statement>", and the owner's email names what fixes it;
4. the status line and the checks panel show one run, with its time; a preview older
   than a change that affects it says so and reruns;
6. a wrong custom scenario is removed (with a reason), Reject stays once the checks
   failed, and the owner's correction starts without the removed scenario.

Each page with a new state is checked with axe-core (0 violations)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.core import mail
from playwright.sync_api import expect

from approvals import checking, services
from approvals.models import Approval, CheckResult, ScenarioRemoval
from audit.models import AuditEvent
from memory import proposals
from memory.models import MemoryItem, MemoryVersion, Status
from memory.representations import checks_summary
from tests.browser.conftest import WAIT_MS, Site, screenshot

pytestmark = pytest.mark.browser

ORDER = "Order order-a goes to Dana's office."
HOME = "Dana normally wants deliveries at home."
IN_FORCE = "Supplier material checks are required."
WRONG = {"kind": "inapplicable", "context": {"task": "order-a"}, "expect": "does_not_apply"}
FAILURE = (
    "A scenario added by rita says it must not apply where task is order-a, but agents "
    "asking there would be told it."
)
AXE = Path(__file__).parent / "vendor" / "axe.min.js"
RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.map(v => `${v.id} (${v.impact}): ${v.help} at ` +
    v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', '));
}"""
CHECKS_FAILED = re.compile(r"checks.failed")


def _page(site: Site, *, width: int = 1280, height: int = 800) -> Any:
    """A page axe can be injected into (the CSP allows scripts from 'self' only: this
    context alone bypasses it; the pages are served unchanged)."""
    context = site.browser.new_context(viewport={"width": width, "height": height}, bypass_csp=True)
    site.contexts.append(context)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    return page


def _sign_in_anywhere(site: Site, page: Any, name: str) -> None:
    """Sign in, wherever the start page is for this person (an owner's may not be "/")."""
    page.goto(f"{site.url}/accounts/login/")
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(f"{name}-demo-pass")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def _no_axe_violations(page: Any) -> None:
    page.add_script_tag(path=str(AXE))
    assert page.evaluate(RUN_AXE) == []


def _head(memory_id: str) -> MemoryVersion:
    item = MemoryItem.objects.get(pk=memory_id)
    return item.versions.get(number=item.head_version)


def _failing_order_a(site: Site) -> str:
    """rita's scenario says order-a's memory must not apply to order-a: its preview fails."""
    memory_id = site.demo.items["order_a"]
    services.scenario_add(
        principal=site.demo.principal("rita"), item=MemoryItem.objects.get(pk=memory_id), data=WRONG
    )
    checking.preview(_head(memory_id).pk)  # the rerun the new scenario asked for
    return memory_id


def _tied_preference(site: Site) -> MemoryVersion:
    """sam's preference that would tie with the one agents are told now (test_tie.py)."""
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


def _rival_rule(site: Site) -> MemoryVersion:
    """PP-4's tenant-wide rule in force, and a rule against it lena already approved."""
    in_force = site.demo.item("tenant_rule")
    for reviewer in ("rita", "lena"):
        services.version_approve(
            principal=site.demo.principal(reviewer), item=in_force, comment="PP-4 holds"
        )
    head = in_force.versions.get()
    assert checking.gate(head.pk) == Status.ACTIVE
    rival = proposals.memory_propose(
        principal=site.demo.agent(),
        data={
            "kind": "enterprise_rule",
            "subject": head.subject_id,
            "field": "material_checks",
            "value": "waived",
            "statement": "Supplier material checks are waived.",
            "scope": {"tenant": "*"},
            "owner": "rita",
            "expires_at": head.expires_at,
            "sources": head.source_ids,
            "basis": {"ref": "PP-4"},
        },
    )
    checking.preview(rival.pk)
    services.version_approve(principal=site.demo.principal("lena"), item=rival.item, comment="")
    return rival


# --- point 2 ---------------------------------------------------------------------------


def test_approving_a_failed_preview_on_its_page_asks_to_confirm_the_named_failures(
    site: Site,
) -> None:
    memory_id = _failing_order_a(site)
    page = _page(site)
    site.sign_in(page, "rita")
    page.goto(f"{site.url}/memories/{memory_id}/")

    card = page.locator("#approve")
    expect(card.locator("#preview-failed")).to_contain_text("Its preview failed 1 check:")
    expect(card.locator("#preview-failed li")).to_have_text(FAILURE)
    _no_axe_violations(page)
    screenshot(page, "item_approve_confirms_failures_1280")

    card.get_by_role("button", name="Approve version 1").click()  # not confirmed: held back
    box = card.get_by_label("Approve despite these failures")
    assert box.evaluate("e => e.validity.valueMissing")
    assert not Approval.objects.filter(version__item_id=memory_id).exists()

    box.check()
    card.get_by_role("button", name="Approve version 1").click()
    expect(page.get_by_role("status").first).to_contain_text("Approved.")
    assert Approval.objects.filter(version__item_id=memory_id, decision="approve").count() == 1


def test_bulk_approve_and_the_a_key_leave_a_failed_preview_out_unless_its_row_is_confirmed(
    site: Site,
) -> None:
    memory_id = _failing_order_a(site)
    rule = site.demo.items["tenant_rule"]
    page = _page(site, width=1400, height=900)
    site.sign_in(page, "rita")
    row = page.locator(f"tr[data-memory='{memory_id}']")
    expect(row.get_by_label(f"Approve “{ORDER}” despite its failed preview")).to_be_visible()
    _no_axe_violations(page)

    page.get_by_label(f"Select “{ORDER}”").check()
    page.get_by_label("Select “Supplier material checks are required.”").check()
    page.get_by_role("button", name="Approve selected").click()

    said = page.locator("ul.messages li")
    expect(said.nth(0)).to_have_text("Approved 1 of 2. Left out 1 whose preview failed.")
    expect(said.filter(has_text=ORDER)).to_contain_text(
        "left out, not approved: its preview failed: a scenario added by rita says it must "
        "not apply where task is order-a"
    )
    screenshot(page, "queue_bulk_left_out_1400")
    assert not Approval.objects.filter(version__item_id=memory_id).exists()
    assert Approval.objects.filter(version__item_id=rule).count() == 1

    row.locator("td[data-label=Waiting]").click()  # the keys act on this row
    page.keyboard.press("a")
    expect(page.locator("ul.messages li").first).to_contain_text("left out, not approved")
    assert not Approval.objects.filter(version__item_id=memory_id).exists()

    row.get_by_label(f"Approve “{ORDER}” despite its failed preview").check()
    row.locator("td[data-label=Waiting]").click()
    page.keyboard.press("a")
    expect(page.locator("ul.messages li").first).to_contain_text("Approved.")
    assert Approval.objects.filter(version__item_id=memory_id).count() == 1


# --- point 3 ---------------------------------------------------------------------------


def test_a_tie_in_the_preview_puts_replacing_where_approve_is(site: Site) -> None:
    rival = _rival_rule(site)
    older = site.demo.items["tenant_rule"]
    page = _page(site, width=1280, height=800)
    site.sign_in(page, "rita")
    page.goto(f"{site.url}/memories/{rival.item_id}/")

    replace = page.locator("#decide #replace")
    button = replace.get_by_role("button", name="Activate this and retire the older one")
    expect(replace).to_contain_text(f"It ties with “{IN_FORCE}”")
    expect(button).to_be_in_viewport()  # not 1,300 px down, in the Impact panel
    first_card = page.locator("#decide > section").first
    expect(first_card).to_have_attribute("id", "replace")
    expect(page.locator("#approve").get_by_role("button", name="Approve version 1")).to_have_class(
        "secondary"
    )
    expect(page.locator("#preview-failed li").first).to_contain_text(f"It ties with “{IN_FORCE}”")
    _no_axe_violations(page)
    screenshot(page, "item_tie_replace_first_1280")

    with site.worker():
        button.click()
        expect(page.get_by_role("status").first).to_contain_text(f"Retired “{IN_FORCE}”.")
        expect(page.locator(".page-head .badge")).to_have_text("active")
    assert MemoryVersion.objects.get(item_id=older).status == Status.RETIRED


def test_a_failed_tie_says_ties_with_and_the_owner_is_told_to_replace_not_to_correct(
    site: Site,
) -> None:
    new = _tied_preference(site)
    mail.outbox.clear()
    page = _page(site, width=1280, height=800)
    site.sign_in(page, "rita")
    with site.worker():  # the gate fails on the tie; the owner is emailed
        page.goto(f"{site.url}/memories/{new.item_id}/")
        expect(page.locator(".page-head .badge")).to_have_text(CHECKS_FAILED)
        for _ in range(WAIT_MS // 100):  # the worker emails after the gate concludes
            if any("Checks failed" in m.subject for m in mail.outbox):
                break
            page.wait_for_timeout(100)
        page.reload()

    expect(page.locator("#status-line")).to_contain_text(
        f"failed its checks: it ties with “{HOME}” with no context, so agents would get no "
        "answer there."
    )
    expect(page.locator("#decide > section").first).to_have_attribute("id", "replace")
    expect(page.get_by_role("button", name="Run the checks again")).to_have_class("secondary")
    _no_axe_violations(page)
    screenshot(page, "item_tie_failed_sentence_1280")

    sams = [m for m in mail.outbox if m.to == ["sam@demo.memgov.local"]]
    [told] = [m for m in sams if "Checks failed" in m.subject]
    body = " ".join(str(told.body).split())
    assert f"What fixes it: it ties with “{HOME}”, so a correction does not help." in body
    assert "propose a correction" not in body.lower()

    # sam, the owner, opens it from the email: told what fixes it, offered no correction.
    owner = _page(site, width=1280, height=800)
    _sign_in_anywhere(site, owner, "sam")
    owner.goto(f"{site.url}/memories/{new.item_id}/")
    expect(owner.locator("#tie-fix")).to_contain_text(
        f"It ties with “{HOME}”: equally ranked, with another value"
    )
    expect(owner.locator("#tie-fix")).to_contain_text("A correction does not help.")
    expect(owner.get_by_role("heading", name="Propose a correction")).to_have_count(0)
    _no_axe_violations(owner)
    screenshot(owner, "item_tie_failed_owner_1280")


# --- point 4 ---------------------------------------------------------------------------


def test_after_a_replace_the_status_line_and_the_checks_panel_show_the_same_run(
    site: Site,
) -> None:
    new = _tied_preference(site)
    page = _page(site, width=1280, height=900)
    site.sign_in(page, "rita")
    with site.worker():
        page.goto(f"{site.url}/memories/{new.item_id}/")
        expect(page.locator(".page-head .badge")).to_have_text(CHECKS_FAILED)
        page.reload()
        page.locator("#replace").get_by_role("button").click()
        expect(page.locator(".page-head .badge")).to_have_text("active")

    summary = checks_summary(_head(new.item_id))  # what the API says
    assert (summary["status"], summary["failed"], summary["run"]) == ("passed", 0, "gate")
    total = summary["total"]
    expect(page.locator("#status-line")).to_have_text("all scenario checks passed")
    expect(page.locator("#checks-summary .badge")).to_have_text(f"{total} of {total} passed")
    expect(page.locator("#checks-run")).to_contain_text("from the gate run of")
    current = page.locator("details.checkrun.is-current")
    expect(current).to_have_count(1)
    expect(current.locator("summary")).to_contain_text("gate run of")
    expect(current.locator("tr.check-failed")).to_have_count(0)
    expect(current.locator("tbody tr")).to_have_count(total)
    _no_axe_violations(page)
    screenshot(page, "item_one_run_after_replace_1280")


def test_a_preview_older_than_a_change_to_its_field_says_so_and_reruns(site: Site) -> None:
    memory_id = site.demo.items["order_a"]
    before = max(r.ran_at for r in CheckResult.objects.filter(version=_head(memory_id)))
    services.memory_retire(
        principal=site.demo.principal("rita"), item=site.demo.item("dana_home"), reason="moved"
    )
    page = _page(site, width=1280, height=900)
    site.sign_in(page, "rita")
    page.goto(f"{site.url}/memories/{memory_id}/")

    expect(page.locator("#preview-stale")).to_contain_text(
        "before another memory of this field stopped being used"
    )
    expect(page.locator("#approve-wait")).to_be_visible()
    expect(page.get_by_role("button", name="Approve version 1")).to_have_count(0)
    screenshot(page, "item_stale_preview_1280")

    with site.worker():
        expect(page.locator("#checks-run")).to_contain_text("from the preview run of")
    after = max(r.ran_at for r in CheckResult.objects.filter(version=_head(memory_id)))
    assert after > before
    shown = page.locator("#checks-run time").get_attribute("datetime")
    assert shown is not None and shown.startswith(after.strftime("%Y-%m-%dT"))
    expect(page.locator("#preview-stale")).to_have_count(0)
    expect(page.get_by_role("button", name="Approve version 1")).to_be_visible()
    _no_axe_violations(page)


# --- point 6 ---------------------------------------------------------------------------


def test_a_wrong_scenario_is_removed_reject_stays_and_the_correction_starts_without_it(
    site: Site,
) -> None:
    memory_id = _failing_order_a(site)
    page = _page(site, width=1280, height=900)
    site.sign_in(page, "rita")
    page.goto(f"{site.url}/memories/{memory_id}/")
    page.get_by_label("Approve despite these failures").check()
    with site.worker():
        page.get_by_role("button", name="Approve version 1").click()
        expect(page.locator(".page-head .badge")).to_have_text(CHECKS_FAILED)

    reject = page.locator("#reject")
    expect(reject.get_by_role("heading", name="Reject")).to_be_visible()
    expect(reject.get_by_role("button", name="Reject")).to_be_visible()
    scenario = page.locator(".custom-scenarios li").first
    scenario.get_by_text("Remove this scenario…").click()
    scenario.get_by_label("Why is this scenario wrong?").fill("order-a is this very order")
    _no_axe_violations(page)
    scenario.get_by_role("button", name="Remove scenario").click()

    expect(page.get_by_role("status").first).to_have_text(
        "Scenario removed. Run the checks again to see the result without it."
    )
    removed = page.locator(".custom-scenarios li.is-removed")
    expect(removed).to_contain_text("Removed by user:rita")
    expect(removed).to_contain_text("“order-a is this very order”")
    screenshot(page, "item_scenario_removed_1280")
    assert ScenarioRemoval.objects.get().removed_by == "user:rita"
    assert AuditEvent.objects.filter(action="memory.scenario_removed").count() == 1

    owner = _page(site, width=1280, height=900)
    _sign_in_anywhere(site, owner, "sam")
    owner.goto(f"{site.url}/memories/{memory_id}/")
    correct = owner.locator("#correct")
    correct.get_by_label("Statement").fill("Order order-a goes to Dana's office, 4 Dock Road.")
    with site.worker():
        correct.get_by_role("button", name="Propose version 2").click()
        expect(owner.locator("#checks-summary .badge")).to_contain_text("passed")
    assert _head(memory_id).number == 2
    assert not CheckResult.objects.filter(version=_head(memory_id), generated=False).exists()
    expect(owner.locator(".custom-scenarios li.is-removed")).to_have_count(1)
    _no_axe_violations(owner)
    screenshot(owner, "item_correction_without_removed_scenario_1280")
