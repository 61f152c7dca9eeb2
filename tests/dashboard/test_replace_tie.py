"""Issue 37, point 5: replacing a tied memory is refused to whoever may not decide, and
for a memory that does not tie; nothing is retired then."""

from __future__ import annotations

from typing import Any

from memory import proposals
from memory.models import MemoryVersion
from tests.dashboard.support import Demo


def _tied(demo: Demo, capture: Any) -> MemoryVersion:
    home = demo.item("dana_home").versions.get()
    with capture(execute=True):
        return proposals.memory_propose(
            principal=demo.agent(),
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


def test_sam_who_may_not_decide_cannot_replace_and_sees_no_button(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    new = _tied(demo, django_capture_on_commit_callbacks)
    sam = demo.client("sam")
    page = sam.get(f"/memories/{new.item_id}/").content.decode()

    response = sam.post(f"/memories/{new.item_id}/replace/", {"older": demo.items["dana_home"]})

    assert "Would tie with" in page
    assert "Activate this and retire the older one" not in page
    assert response.status_code == 403
    assert MemoryVersion.objects.get(item_id=demo.items["dana_home"]).status == "active"


def test_a_memory_that_does_not_tie_is_not_retired(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    new = _tied(demo, django_capture_on_commit_callbacks)
    rita = demo.client("rita")
    assert (
        "Activate this and retire the older one"
        in rita.get(f"/memories/{new.item_id}/").content.decode()
    )

    response = rita.post(f"/memories/{new.item_id}/replace/", {"older": demo.items["sarah_nova"]})

    assert response.status_code == 409
    assert "no longer ties with this one" in response.content.decode()
    assert MemoryVersion.objects.get(item_id=demo.items["sarah_nova"]).status == "active"
