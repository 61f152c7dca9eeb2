"""Issue 43, point 12: the pending-review email says what the preview found, even when
the worker takes the email before the preview the outbox also asked for."""

from __future__ import annotations

from django.core import mail

from approvals import tasks
from approvals.models import CheckResult
from memory import proposals
from tests.dashboard.support import Demo


def test_the_review_email_runs_a_missing_preview_first_and_reports_it(demo: Demo) -> None:
    order = demo.item("order_a").versions.get()
    note = proposals.memory_propose(  # its outbox rows are not relayed: no preview yet
        principal=demo.agent(),
        data={
            "kind": "task_fact",
            "subject": order.subject_id,
            "field": "delivery_note",
            "value": "ring twice",
            "statement": "Order order-a's note: ring twice.",
            "scope": order.scope,
            "owner": "sam",
            "expires_at": order.expires_at,
            "sources": order.source_ids,
            "basis": order.basis,
        },
    )
    assert not CheckResult.objects.filter(version=note).exists()
    mail.outbox.clear()

    tasks.notify_pending_review(note.pk)

    [rita] = [m for m in mail.outbox if m.to == ["rita@demo.memgov.local"]]
    body = " ".join(str(rita.body).split())
    assert "Preview checks: all " in body and "not finished yet" not in body
    assert CheckResult.objects.filter(version=note, run="preview").exists()
