"""A real SMTP server on loopback receives the pending-review mail, and the link in it
opens the item for the reviewer it was sent to."""

from __future__ import annotations

import re
from datetime import timedelta
from email.message import EmailMessage
from typing import Any
from urllib.parse import urlsplit

from django.test import Client
from django.utils import timezone

from approvals.services import version_approve
from approvals.tasks import remind_pending_and_expiring
from memory import proposals
from memory.models import MemoryVersion
from tests.conftest import later
from tests.dashboard.support import DEMO_PASSWORD, Demo
from tests.mailserver import Inbox, smtp, text

__all__ = ["smtp"]  # the fixture, used by name

LINK = re.compile(r"https?://\S+/memories/mem_\w+/")


def _text(message: EmailMessage) -> str:
    return text(message)


def _propose_p9_renewal(demo: Demo, on_commit: Any) -> MemoryVersion:
    source = MemoryVersion.objects.get(item_id=demo.items["p9_rule"]).source_ids
    with on_commit(execute=True):
        return proposals.memory_propose(
            principal=demo.agent(),
            data={
                "kind": "enterprise_rule",
                "subject": demo.item("p9_rule").subject_id,
                "field": "renewal_discount",
                "value": "5%",
                "statement": "Renewals of project P-9 keep the 5% discount of APR-2291.",
                "scope": {"project": "P-9"},
                "owner": "rita",
                "expires_at": later(60),
                "sources": source,
                "visibility": ["staff"],
            },
        )


def test_each_reviewer_opens_the_item_from_the_link_in_their_email(
    demo: Demo, django_capture_on_commit_callbacks: Any, smtp: Inbox
) -> None:
    version = _propose_p9_renewal(demo, django_capture_on_commit_callbacks)

    recipients = sorted(m["To"] for m in smtp.messages)
    assert recipients == [
        "lena@demo.memgov.local",
        "omar@demo.memgov.local",
        "rita@demo.memgov.local",
    ]
    for name in ("rita", "omar"):
        (message,) = smtp.to(f"{name}@demo.memgov.local")
        assert " ".join(message["Subject"].split()) == (
            f"[Memgov] Waiting for your review: “{version.statement}”"
        )
        links = LINK.findall(_text(message))
        assert links == [f"http://127.0.0.1:8000/memories/{version.item_id}/"]
        client = Client()
        assert client.login(username=name, password=DEMO_PASSWORD.format(name))

        response = client.get(urlsplit(links[0]).path)

        assert response.status_code == 200
        page = response.content.decode()
        assert "Renewals of project P-9 keep the 5% discount of APR-2291." in page
        assert "Approve version 1" in page


def test_the_link_does_not_open_the_item_for_someone_it_was_not_sent_to(
    demo: Demo, django_capture_on_commit_callbacks: Any, smtp: Inbox
) -> None:
    """sam has no authority over project P-9: no mail, and the URL is a 404 for him."""
    version = _propose_p9_renewal(demo, django_capture_on_commit_callbacks)
    client = Client()
    assert client.login(username="sam", password=DEMO_PASSWORD.format("sam"))

    assert smtp.to("sam@demo.memgov.local") == []
    assert client.get(f"/memories/{version.item_id}/").status_code == 404


def test_the_owner_is_warned_7_days_and_1_day_ahead_and_the_link_opens_the_item(
    demo: Demo, django_capture_on_commit_callbacks: Any, smtp: Inbox
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        version_approve(principal=demo.principal("rita"), item=demo.item("order_a"), comment="")
    smtp.messages.clear()  # the owner was not told of the activation; nothing else is here
    active = MemoryVersion.objects.filter(item_id=demo.items["order_a"], status="active")

    active.update(expires_at=timezone.now() + timedelta(days=5))
    remind_pending_and_expiring()
    active.update(expires_at=timezone.now() + timedelta(hours=20))
    remind_pending_and_expiring()
    remind_pending_and_expiring()  # the daily task may run twice: nobody is told twice

    warnings = smtp.to("sam@demo.memgov.local")
    subjects = [" ".join(m["Subject"].split()) for m in warnings]
    assert len(subjects) == 2
    prefix = "[Memgov] Expiring: “Order order-a goes to Dana's office.”, "
    assert subjects[0].startswith(prefix) and subjects[0].endswith(" UTC (in 5 days)")
    assert subjects[1].startswith(prefix) and subjects[1].endswith(" UTC (in 20 hours)")
    (link,) = set(LINK.findall(_text(warnings[0])) + LINK.findall(_text(warnings[1])))
    client = Client()
    assert client.login(username="sam", password=DEMO_PASSWORD.format("sam"))
    page = client.get(urlsplit(link).path)
    assert page.status_code == 200
    assert "Order order-a goes to Dana&#x27;s office." in page.content.decode()
