"""Issue 37, point 4: the owner of a memory whose checks failed proposes a correction
from its page; bad input changes nothing."""

from __future__ import annotations

from typing import Any

from memory import catalog
from memory.models import MemoryVersion, Status
from tests.dashboard.support import Demo


def _failed(demo: Demo) -> str:
    memory_id = demo.items["order_a"]
    MemoryVersion.objects.filter(item_id=memory_id).update(status=Status.CHECKS_FAILED)
    return memory_id


def test_only_the_owner_is_offered_the_correction_form(demo: Demo) -> None:
    memory_id = _failed(demo)

    owner = demo.client("sam").get(f"/memories/{memory_id}/").content.decode()
    reviewer = demo.client("rita").get(f"/memories/{memory_id}/").content.decode()

    assert 'id="correct"' in owner and "Propose version 2" in owner
    assert 'id="correct"' not in reviewer


def test_a_correction_that_is_not_json_is_refused_and_changes_nothing(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    memory_id = _failed(demo)
    # An address as text or as parts: a JSON box, where quotes matter.
    catalog.field_define(
        principal=demo.principal("rita"),
        name="delivery_address",
        data={"value_schema": {"type": ["string", "object"]}},
    )
    body = {
        "value": "4 Dock Road",
        "statement": "Order order-a goes to the office.",
        "head_version": "1",
    }

    with django_capture_on_commit_callbacks(execute=True):
        refused = demo.client("sam").post(f"/memories/{memory_id}/correct/", body)
        accepted = demo.client("sam").post(
            f"/memories/{memory_id}/correct/",
            {**body, "value": '"4 Dock Road"', "scope": "task=order-a"},
        )

    assert refused.status_code == 422
    assert accepted.status_code == 302
    versions = MemoryVersion.objects.filter(item_id=memory_id).order_by("number")
    assert [(v.number, v.status, v.value) for v in versions] == [
        (1, "superseded", "4 Dock Road"),
        (2, "pending_review", "4 Dock Road"),
    ]
    assert versions[1].statement == "Order order-a goes to the office."
