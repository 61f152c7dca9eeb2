"""Issue 37, point 7: one source revocation is one event, so each owner gets one email
naming every memory of theirs it retired (through a real SMTP server, aiosmtpd)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from memory import proposals
from memory.models import MemoryVersion
from tests.conftest import later
from tests.dashboard.support import Demo
from tests.mailserver import Inbox, smtp, text

__all__ = ["smtp"]  # the fixture, used by name


def test_revoking_a_source_of_two_of_sams_memories_sends_sam_one_email(
    demo: Demo, smtp: Inbox, django_capture_on_commit_callbacks: Any
) -> None:
    order = demo.item("order_a")
    source = order.versions.get().source_ids[0]
    with django_capture_on_commit_callbacks(execute=True):
        second = proposals.memory_propose(
            principal=demo.agent(),
            data={
                "kind": "task_fact",
                "subject": str(order.subject_id),
                "field": "delivery_window",
                "value": "mornings",
                "statement": "Order order-a is delivered in the morning.",
                "scope": {"task": "order-a"},
                "owner": "sam",
                "expires_at": later(7),
                "sources": [source],
            },
        )
    smtp.messages.clear()

    with django_capture_on_commit_callbacks(execute=True):
        response = demo.client("rita").post(
            f"/sources/{source}/revoke/", {"reason": "ORD-A was cancelled"}
        )

    assert response.status_code == 302
    assert {v.status for v in MemoryVersion.objects.filter(item_id=second.item_id)} == {"retired"}
    retired = [m for m in smtp.messages if "Retired" in str(m["Subject"])]
    assert Counter(m["To"] for m in retired) == {"sam@demo.memgov.local": 1}
    (message,) = retired
    assert " ".join(str(message["Subject"]).split()) == "[Memgov] Retired: 2 memories you own"
    body = text(message)
    assert "Order order-a goes to Dana's office." in body
    assert "Order order-a is delivered in the morning." in body
