"""Issue 37, point 10: no page shows a raw ``mem_`` id in its visible text, except where
ids are the point (``code``, ``.id``: the reference card, id links, the audit's target
column)."""

from __future__ import annotations

from typing import Any

import pytest

from approvals import checking, services
from memory.models import Source
from tests.browser.conftest import Site

pytestmark = pytest.mark.browser

VISIBLE_WITHOUT_IDS = """() => {
  const main = document.querySelector('main').cloneNode(true);
  main.querySelectorAll('code, .id, [hidden], .visually-hidden').forEach(e => e.remove());
  return main.innerText;
}"""


def pages(site: Site) -> list[str]:
    demo = site.demo
    subjects = {s for s in (demo.item(key).subject_id for key in demo.items) if s is not None}
    return [
        "/",
        "/mine/",
        "/browse/",
        f"/browse/?tt_subject={demo.item('sarah_pune').subject_id}",
        "/entities/",
        "/audit/",
        "/policy/",
        "/fields/",
        "/overview/",
        *(f"/memories/{memory_id}/" for memory_id in demo.items.values()),
        *(f"/entities/{subject}/" for subject in sorted(subjects)),
    ]


def _ids_shown(page: Any) -> list[str]:
    text = page.evaluate(VISIBLE_WITHOUT_IDS)
    return [line for line in text.splitlines() if "mem_" in line]


def test_no_page_shows_a_raw_memory_id_outside_id_columns(site: Site) -> None:
    page = site.page(width=1400)
    site.sign_in(page, "rita")
    shown = {}
    for path in pages(site):
        page.goto(f"{site.url}{path}")
        lines = _ids_shown(page)
        if lines:
            shown[path] = lines
    assert shown == {}


# Issue 43, point 14: machine vocabulary in words, one name per thing, ids only in id
# columns. What a reviewer reads (``code`` is where a name is meant to be typed or is an id).
VISIBLE_TEXT = """() => {
  const main = document.querySelector('main').cloneNode(true);
  main.querySelectorAll('code, pre, [hidden], .visually-hidden').forEach(e => e.remove());
  return main.innerText;
}"""
CODES = (
    "held_unresolved",
    "pending_review",
    "checks_failed",
    "task_fact",
    "enterprise_rule",
    "business_record",
    "out_of_scope",
    "no_applicable_fact",
    "tenant=*",
    "every context in the tenant",  # the scope's old second name: it is "tenant-wide"
    "unscoped",  # and its third
    "verified_record",
    "name_token",
    "alias_token",
    "alias_prefix",
    "Held Unresolved",
    "Pending Review",
    "src_",  # a source is named by its kind and reference
)
LINKS_SHOWING_IDS = """() => [...document.querySelectorAll('main a')]
  .filter(a => /\\b(mem|ent|src)_/.test(a.innerText) && !a.closest('td.id, code'))
  .map(a => a.innerText)"""


def _situations(site: Site) -> list[str]:
    """Pages a walk meets beyond the demo's first state: the held questions, and the
    time travel with facts, abstentions and everything considered."""
    from tests.browser.test_errors_beside_fields import _held
    from tests.browser.test_value_question import send_it_there

    value = send_it_there(site)
    subject = _held(site, "Dana")
    dana = site.demo.item("order_a").subject_id
    home = site.demo.item("dana_home").versions.get()
    services.source_revoke(  # dana_home is retired: its page gives the reason in words
        principal=site.demo.principal("rita"),
        source=Source.objects.get(pk=home.source_ids[0]),
        reason="she moved",
    )
    p9 = site.demo.item("p9_rule")  # in use: the tenant-wide rule's checks then name it
    for reviewer in ("rita", "lena"):
        services.version_approve(principal=site.demo.principal(reviewer), item=p9, comment="")
    checking.gate(p9.versions.get().pk)
    return [
        f"/memories/{site.demo.items['tenant_rule']}/",
        f"/memories/{home.item_id}/",
        f"/memories/{value.item_id}/",
        f"/memories/{subject.item_id}/",
        "/entities/",
        "/browse/?status=held_unresolved",
        f"/browse/?tt_subject={dana}&tt_context=task%3Dorder-a",
        f"/browse/?tt_subject={dana}&tt_context=task%3Dorder-b",
    ]


def test_no_page_shows_a_status_or_kind_code_or_an_id_as_link_text(site: Site) -> None:
    page = site.page(width=1400)
    site.sign_in(page, "rita")
    codes: dict[str, list[str]] = {}
    links: dict[str, list[str]] = {}
    for path in [*pages(site), *_situations(site)]:
        page.goto(f"{site.url}{path}")
        page.locator("main details").evaluate_all("ds => ds.forEach(d => d.open = true)")
        text = page.evaluate(VISIBLE_TEXT)
        found = [line.strip() for line in text.splitlines() if any(c in line for c in CODES)]
        if found:
            codes[path] = found
        shown = page.evaluate(LINKS_SHOWING_IDS)
        if shown:
            links[path] = shown
    assert codes == {}
    assert links == {}
