"""Issue 43, point 12: the pending-review email says what the preview found, even when
the worker takes the email before the previews the outbox also asked for — for each
memory a digest lists, not only the one that sent it."""

from __future__ import annotations

from django.core import mail

from approvals import tasks
from approvals.models import CheckResult
from tests.dashboard.support import Demo


def test_a_digest_runs_every_missing_preview_first_and_reports_each(demo: Demo) -> None:
    # Their outbox rows are not relayed: no preview yet.
    note = demo.order_a_fact("delivery_note", "ring twice", "Order order-a's note: ring twice.")
    window = demo.order_a_fact("delivery_window", "8-11", "Order order-a's window: 8-11.")
    assert not CheckResult.objects.filter(version__in=[note, window]).exists()
    mail.outbox.clear()

    tasks.notify_pending_review(window.pk)

    [rita] = [m for m in mail.outbox if m.to == ["rita@demo.memgov.local"]]
    body = " ".join(str(rita.body).split())
    assert "ring twice" in body and "8-11" in body  # one digest names both
    assert body.count("Preview checks: all ") == 2
    assert "not finished yet" not in body
    for version in (note, window):
        assert CheckResult.objects.filter(version=version, run="preview").exists()
