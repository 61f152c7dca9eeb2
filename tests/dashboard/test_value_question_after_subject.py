"""Issue 44, point 11: "send Dana's order there" asks the subject first; once a reviewer
links the subject on the item page, the same page asks the value question with Dana's
addresses as options, and answering it sends the proposal to review."""

from __future__ import annotations

from typing import Any

import pytest

from memory import proposals
from memory.models import MemoryVersion
from tests.conftest import later
from tests.dashboard.support import Demo
from tests.dashboard.test_open_questions import QUESTION, _option, activate_order_a


@pytest.fixture
def commit(django_capture_on_commit_callbacks: Any) -> Any:
    return lambda: django_capture_on_commit_callbacks(execute=True)


def test_the_value_question_offers_danas_addresses_once_her_subject_is_linked(
    demo: Demo, commit: Any
) -> None:
    order_a = activate_order_a(demo, commit)
    dana = str(order_a.subject_id)
    with commit():
        held = proposals.memory_propose(
            principal=demo.agent(),
            data={
                "kind": "task_fact",
                "subject_mention": "Dana",
                "field": "delivery_address",
                "value": "there",
                "statement": "Order order-b goes where Dana said.",
                "scope": {"task": "order-b"},
                "owner": "sam",
                "expires_at": later(7),
                "sources": order_a.source_ids,
            },
        )
    rita = demo.client("rita")
    before = rita.get(f"/memories/{held.item_id}/").content.decode()
    assert "Needs a subject: “Dana”" in before
    assert "once the subject is linked above, they are offered here" in before

    with commit():
        rita.post(f"/memories/{held.item_id}/subject/", {"subject": dana, "confirm": "on"})

    page = rita.get(f"/memories/{held.item_id}/").content.decode()
    assert f"Needs a value: {QUESTION}" in page
    home, office = _option(page, "12 Elm Street"), _option(page, "4 Dock Road")
    assert home != office
    with commit():
        rita.post(f"/memories/{held.item_id}/clarify/", {"choice": office})
    version = MemoryVersion.objects.get(pk=held.pk)
    assert (version.status, version.subject_id, version.value) == (
        "pending_review",
        dana,
        "4 Dock Road",
    )
