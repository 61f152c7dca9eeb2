"""Issue 37, point 10: no page shows a raw ``mem_`` id in its visible text, except where
ids are the point (``code``, ``.id``: the reference card, id links, the audit's target
column)."""

from __future__ import annotations

from typing import Any

import pytest

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
