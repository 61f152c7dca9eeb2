"""Issue 15: the Impact box says, per context, what agents are told now and after
activation; check details show statements and values, and say why a check failed."""

from __future__ import annotations

import re

from django.utils.html import strip_tags

from approvals.checking import impact_now
from approvals.models import CheckResult
from dashboard.impact import CheckView, check_views
from memory.models import MemoryVersion
from tests.dashboard.support import Demo


def _block(html: bytes, start: str, end: str) -> str:
    """The markup from the first ``start`` to the next ``end``."""
    text = html.decode()
    at = text.index(start)
    return text[at : text.index(end, at) + len(end)]


def _text(markup: str) -> str:
    return " ".join(strip_tags(markup).replace("&quot;", '"').replace("&#x27;", "'").split())


def test_the_office_task_fact_outranks_the_home_preference_for_order_a(demo: Demo) -> None:
    """Seed 002: Dana's home preference answers for order-a today; once the task fact is
    active the office does, and the preference is outranked there."""
    order_a = MemoryVersion.objects.get(item_id=demo.items["order_a"])

    own, elsewhere = impact_now(order_a)

    assert own.own_scope and own.context == {"task": "order-a"}
    assert own.before is not None and own.before.memory_id == demo.items["dana_home"]
    assert own.after is not None and own.after.memory_id == order_a.item_id
    assert [c.memory_id for c in own.outranked] == [demo.items["dana_home"]]
    assert own.changed
    # Outside order-a (the preference's own, unscoped context) nothing changes.
    assert elsewhere.context == {} and not elsewhere.own_scope and not elsewhere.changed
    assert elsewhere.after is not None and elsewhere.after.memory_id == demo.items["dana_home"]


def test_the_impact_box_names_the_outranked_preference_and_the_new_value(demo: Demo) -> None:
    response = demo.client("rita").get(f"/memories/{demo.items['order_a']}/")

    assert response.status_code == 200
    impact = _text(_block(response.content, 'id="impact"', "</section>"))
    assert "task=order-a" in impact
    assert "Told now" in impact and "After activation" in impact
    assert '"12 Elm Street"' in impact and "Dana normally wants deliveries at home." in impact
    assert '"4 Dock Road"' in impact and "Order order-a goes to Dana's office." in impact
    outranked = _text(_block(response.content, 'class="outranked"', "</div>"))
    assert "Becomes outranked" in outranked and "12 Elm Street" in outranked
    assert "No other active memory" not in impact


def test_the_stored_check_says_the_same_with_ids_only(demo: Demo) -> None:
    """The API lists the stored comparison to anyone who may read the item: ids, never
    another item's statement."""
    preview = CheckResult.objects.get(
        version__item_id=demo.items["order_a"],
        run="preview",
        scenario__name="applicable: its own scope",
    )

    [entry] = preview.impact
    assert entry["context"] == {"task": "order-a"}
    assert entry["before"].startswith(f"{demo.items['dana_home']} v1 ")
    assert entry["after"].startswith(f"{demo.items['order_a']} v1 ")
    assert entry["outranked"] == [f"{demo.items['dana_home']} v1"]
    assert "Elm" not in str(entry)


def _failed_check(demo: Demo) -> CheckView:
    version = MemoryVersion.objects.get(item_id=demo.items["order_a"])
    result = CheckResult.objects.filter(version=version).first()
    assert result is not None
    result.outcome = "failed"
    result.scenario = {**result.scenario, "name": "applicable: its own scope"}
    result.detail = (
        f"not selected (expected applies): {demo.items['dana_home']} v1 (only applicable fact)"
    )
    [view] = check_views(demo.principal("rita"), version, [result])
    return view


def test_a_failed_check_says_why_and_names_the_memory_by_its_statement(demo: Demo) -> None:
    view = _failed_check(demo)

    assert view.why.startswith("Agents asking in its own scope would not be given it")
    assert view.why.count(".") <= 1  # one sentence
    [named] = [m for _, m in view.parts if m is not None]
    assert (named.statement, named.value) == (
        "Dana normally wants deliveries at home.",
        '"12 Elm Street"',
    )


def test_the_checks_table_links_items_instead_of_printing_bare_ids(demo: Demo) -> None:
    response = demo.client("rita").get(f"/memories/{demo.items['order_a']}/")

    table = _block(response.content, '<table class="checks">', "</table>")
    assert 'class="ref"' in table
    outside_links = _text(re.sub(r"<a [^>]*>.*?</a>", "", table, flags=re.S))
    assert not re.search(r"\bmem_[0-9a-z]{6,}", outside_links), outside_links
