"""Every email, rendered from real events and received by a real SMTP server: reviewers read
the statement and value they may see, kinds read as English ("an enterprise rule"), times
are in the tenant's zone with a relative form and no microseconds, and each event reaches
each person once — a retirement of an item with two open versions is one email."""

from __future__ import annotations

import email
import email.policy
import re
from collections import Counter
from datetime import timedelta
from email.message import EmailMessage

import pytest
from django.core.management import call_command
from django.utils import timezone

from approvals import tasks
from approvals.emails import relative
from core.models import Membership, Tenant
from memory.models import MemoryVersion
from tests.approvals.support import EXCEPTION, Flow, head
from tests.mailserver import Inbox, html, smtp, text

__all__ = ["smtp"]  # the fixture, used by name

P9 = {"project": "P-9"}
NO_VERIFICATION = {"order": ["specificity", "kind", "valid_from"]}
STATEMENT = "Renewals follow exception APR-2291."
ISO_TIME = re.compile(r"\d{2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}T|\+00:00|\.\d{6}")
RAW_KIND = re.compile(r"\b(an? )?(enterprise_rule|task_fact)\b|\bA enterprise\b|\ban task\b")


def _read(message: EmailMessage) -> str:
    return f"{message['Subject']}\n{text(message)}\n{html(message)}"


def _well_written(message: EmailMessage) -> str:
    """The checks every email passes; returns its text for more."""
    body = _read(message)
    assert not ISO_TIME.search(body), ISO_TIME.search(body)
    assert not RAW_KIND.search(body.replace('"material_checks"', "")), RAW_KIND.search(body)
    assert "None" not in body
    return body


def _subject(message: EmailMessage) -> str:
    return " ".join(str(message["Subject"]).split())


def _one_per_person(inbox: Inbox) -> list[str]:
    counts = Counter(m["To"] for m in inbox.messages)
    assert all(n == 1 for n in counts.values()), counts
    return sorted(counts)


def test_a_reviewer_is_told_of_an_enterprise_rule_with_its_statement_and_value_in_berlin_time(
    flow: Flow, smtp: Inbox
):
    call_command("create_tenant", "acme", "--update", "--time-zone", "Europe/Berlin")

    memory = flow.rule(P9)

    assert _one_per_person(smtp) == ["lena@example.com", "omar@example.com", "rita@example.com"]
    (message,) = smtp.to("omar@example.com")
    body = _well_written(message)
    assert _subject(message) == (f"[Memgov] Waiting for your review: “{STATEMENT}”")
    assert memory["id"] not in _subject(message)  # a statement, not an id (issue 37)
    assert "An enterprise rule waits for your review (2 approvals required)." in text(message)
    assert text(message).splitlines()[4] == f"“{STATEMENT}”"  # the headline (issue 43)
    assert f'Value:     "{EXCEPTION}"' in text(message)
    assert re.search(r"Proposed:  by agent:bot, \d{4}-\d\d-\d\d \d\d:\d\d CET \(just now\)", body)
    assert re.search(r"Expires:   \d{4}-\d\d-\d\d \d\d:\d\d CE(S)?T \(in 3 months\)", body)


def test_a_busy_queue_gives_each_reviewer_one_digest_and_the_daily_reminder_is_one_email(
    flow: Flow, smtp: Inbox, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        for task in ("renewal-3", "renewal-4"):
            flow.uncommitted("agent", "/memories", flow.body("task_fact", {**P9, "task": task}))
    with django_capture_on_commit_callbacks(execute=True):
        for callback in callbacks:
            callback()

    assert _one_per_person(smtp) == ["omar@example.com", "rita@example.com"]
    (digest,) = smtp.to("omar@example.com")
    body = _well_written(digest)
    assert digest["Subject"] == "[Memgov] 2 memories wait for your review"
    assert text(digest).count(f"“{STATEMENT}”") == 2
    assert "A task fact, field" in body

    smtp.messages.clear()
    MemoryVersion.objects.filter(status="pending_review").update(
        status_changed_at=timezone.now() - timedelta(days=2)
    )
    tasks.remind_pending_and_expiring()
    tasks.remind_pending_and_expiring()  # the daily run twice: nobody is told twice

    assert _one_per_person(smtp) == ["omar@example.com", "rita@example.com"]
    (reminder,) = smtp.to("rita@example.com")
    _well_written(reminder)
    assert reminder["Subject"] == "[Memgov] 2 memories still wait for your review"


def test_retiring_an_item_with_an_open_correction_sends_its_owner_one_email(
    flow: Flow, smtp: Inbox
):
    memory = flow.active_rule(P9, owner="lena")
    flow.correct(memory["id"], 1, value="check every delivery")
    smtp.messages.clear()

    flow.ok(flow.retire(memory["id"], reason="APR-2291 was withdrawn"))

    assert _one_per_person(smtp) == ["lena@example.com"]
    (message,) = smtp.to("lena@example.com")
    body = _well_written(message)
    assert _subject(message) == f"[Memgov] Retired: “{STATEMENT}”"
    assert "versions 1 and 2" in body
    assert "Reason: APR-2291 was withdrawn" in body
    assert STATEMENT in body


def test_an_owner_who_may_not_see_the_sources_is_told_without_the_statement_or_value(
    flow: Flow, smtp: Inbox
):
    staff_only = flow.source("approval_record", visibility=["staff"])
    memory = flow.active_rule(P9, owner="lena", sources=[staff_only])
    Membership.objects.filter(user__username="lena").update(labels=["contractors"])
    smtp.messages.clear()

    flow.ok(flow.retire(memory["id"], reason="APR-2291 was withdrawn"))

    (message,) = smtp.to("lena@example.com")
    body = _well_written(message)
    assert STATEMENT not in body
    assert "Statement and value are not shown: they come from sources you may not see." in body


def test_the_owner_is_told_once_that_checks_failed(flow: Flow, smtp: Inbox):
    too_broad = {"kind": "inapplicable", "context": P9, "expect": "does_not_apply"}
    memory = flow.rule(P9, scenarios=[too_broad], owner="omar")
    smtp.messages.clear()
    flow.approve(memory["id"], "rita", "lena")
    tasks.notify_checks_failed.apply(args=(head(memory["id"]).pk,)).get()

    # A long subject is folded; the unfolded value is what a mail client shows.
    (message,) = [m for m in smtp.messages if _subject(m).startswith("[Memgov] Checks failed")]
    assert message["To"] == "omar@example.com"
    body = _well_written(message)
    assert "The scenario checks of an enterprise rule you own failed" in body
    assert STATEMENT in body
    assert "propose a correction" in body
    # One plain sentence with statements, never the engine's string (issue 37).
    assert (
        f"Why: “{STATEMENT}” failed its checks: a scenario added by agent bot says it must not "
        "apply where project is P-9, but agents asking there would be told it." in body
    )
    assert "expected does not apply" not in body and "custom #" not in body


def test_each_approver_learns_their_approval_did_not_take_effect(flow: Flow, smtp: Inbox):
    too_broad = {"kind": "inapplicable", "context": P9, "expect": "does_not_apply"}
    memory = flow.rule(P9, scenarios=[too_broad], owner="omar")
    smtp.messages.clear()

    flow.approve(memory["id"], "rita", "lena")
    tasks.notify_checks_failed.apply(args=(head(memory["id"]).pk,)).get()

    told = [m for m in smtp.messages if "did not take effect" in _subject(m)]
    assert sorted(m["To"] for m in told) == ["lena@example.com", "rita@example.com"]
    for message in told:
        assert _subject(message) == f"[Memgov] Your approval did not take effect: “{STATEMENT}”"
        body = _well_written(message)
        assert "but your approval did not take effect: its scenario checks failed" in body
    # One email per event per person: the owner's is the only other one about the failure.
    about = Counter(m["To"] for m in smtp.messages if STATEMENT in _subject(m))
    assert about == {"omar@example.com": 1, "lena@example.com": 1, "rita@example.com": 1}


def test_expiry_warnings_name_the_local_time_and_how_far_off_it_is(flow: Flow, smtp: Inbox):
    Tenant.objects.filter(slug="acme").update(time_zone="Asia/Kolkata")
    memory = flow.active_rule(P9, owner="omar")
    other = flow.active_rule({"project": "P-9", "task": "renewal-9"}, owner="omar")
    soon = timezone.now() + timedelta(days=3, hours=1)
    MemoryVersion.objects.filter(item_id__in=[memory["id"], other["id"]]).update(expires_at=soon)
    smtp.messages.clear()

    tasks.remind_pending_and_expiring()

    (message,) = smtp.to("omar@example.com")
    body = _well_written(message)
    assert message["Subject"] == "[Memgov] 2 memories you own expire soon"
    assert body.count("IST (in 3 days)") >= 2


def test_revalidation_failures_reach_owner_and_reviewers_once_each(flow: Flow, smtp: Inbox):
    record = flow.source("business_record", content="PO-7731 v3: exception granted.")
    verified = flow.rule(P9, sources=[record], owner="omar")["id"]
    flow.active_rule(P9, value="check every delivery", owner="omar")
    flow.approve(verified, "rita", "lena")
    smtp.messages.clear()

    body = {"precedence": NO_VERIFICATION, "reason": "verification is not a rank any more"}
    flow.ok(flow.post("rita", "/policy", body), 201)

    failed = [m for m in smtp.messages if _subject(m).startswith("[Memgov] Re-validation")]
    counts = Counter(m["To"] for m in failed)
    assert counts == {"omar@example.com": 1, "rita@example.com": 1, "lena@example.com": 1}
    (owner,) = [m for m in failed if m["To"] == "omar@example.com"]
    text_ = _well_written(owner)
    assert "You own it. It is suspended: no agent gets it" in text_
    assert STATEMENT in text_


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (20, "just now"),
        (-3 * 86400 - 600, "3 days ago"),
        (4 * 86400 + 23 * 3600, "in 5 days"),
        (20 * 3600 - 60, "in 20 hours"),
        (90 * 86400, "in 3 months"),
    ],
)
def test_relative_times_read_naturally(seconds: int, said: str):
    now = timezone.now()
    assert relative(now + timedelta(seconds=seconds), now) == said


def test_make_runs_mail_folder_gets_one_eml_file_per_message(flow: Flow, settings, tmp_path):
    """``EMAIL_URL=file:///…`` (what ``make run`` sets): each message is a file a mail
    client opens, none mixed into a log."""
    settings.EMAIL_BACKEND = "operations.mail.EmlFileBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path)

    memory = flow.rule(P9)

    files = sorted(tmp_path.iterdir())
    assert memory["statement"] == STATEMENT
    assert [f.suffix for f in files] == [".eml", ".eml", ".eml"]
    parsed = [email.message_from_bytes(f.read_bytes(), policy=email.policy.default) for f in files]
    assert sorted(m["To"] for m in parsed) == [
        "lena@example.com",
        "omar@example.com",
        "rita@example.com",
    ]
    assert all(STATEMENT in _subject(m) for m in parsed)
