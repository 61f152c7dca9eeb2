"""Issue 43, point 12: an email can be triaged from the inbox. Its subject line and its
headline are the statement (not kind + field); it says what the checks found, who else
must decide, what it corrects, and why a memory was retired in words ("its source
approval record APR-2291 memo was revoked: …", never a ``src_`` id). A recipient who may
not see the memory is told none of it. Received by a real SMTP server."""

from __future__ import annotations

from email.message import EmailMessage

from core.models import Membership
from tests.approvals.support import EXCEPTION, Flow
from tests.mailserver import Inbox, html, smtp, text

__all__ = ["smtp"]  # the fixture, used by name

P9 = {"project": "P-9"}
TENANT_WIDE = {"tenant": "*"}
STATEMENT = "Renewals follow exception APR-2291."


def _subject(message: EmailMessage) -> str:
    return " ".join(str(message["Subject"]).split())


def _only(inbox: Inbox, address: str) -> EmailMessage:
    (message,) = inbox.to(address)
    return message


def _headline(message: EmailMessage) -> str:
    """The first line after the greeting and the opening sentence."""
    lines = [line for line in text(message).splitlines() if line.strip()]
    return lines[2]


def test_a_tenant_wide_rule_tells_rita_its_checks_passed_and_that_lena_must_decide_too(
    flow: Flow, smtp: Inbox
):
    flow.rule(TENANT_WIDE)

    rita = _only(smtp, "rita@example.com")
    assert _subject(rita) == f"[Memgov] Waiting for your review: “{STATEMENT}”"
    assert _headline(rita) == f"“{STATEMENT}”"
    body = text(rita)
    assert "Preview checks: all " in body and " passed." in body
    assert "lena must decide too." in body
    assert "lena must decide too." in html(rita)
    assert "rita must decide too." in text(_only(smtp, "lena@example.com"))


def test_a_reviewer_of_a_p9_rule_learns_one_more_approval_is_needed_from_two_others(
    flow: Flow, smtp: Inbox
):
    flow.rule(P9)

    omar = text(_only(smtp, "omar@example.com"))
    assert "One more approval is needed besides yours, from lena or rita." in omar


def test_a_failing_preview_is_named_in_the_email_before_anyone_approves(flow: Flow, smtp: Inbox):
    too_broad = {"kind": "inapplicable", "context": P9, "expect": "does_not_apply"}
    flow.rule(P9, scenarios=[too_broad])

    body = text(_only(smtp, "omar@example.com"))
    assert "Preview checks: 1 of " in body
    assert (
        f"failed. “{STATEMENT}” failed its checks: a scenario added by agent bot says it must "
        "not apply where project is P-9, but agents asking there would be told it." in body
    )


def test_a_correction_says_what_it_corrects(flow: Flow, smtp: Inbox):
    memory = flow.active_rule(P9)
    smtp.messages.clear()

    flow.correct(memory["id"], 1, value="check every delivery")

    omar = _only(smtp, "omar@example.com")
    assert _subject(omar) == f"[Memgov] Waiting for your review: “{STATEMENT}”"
    expected = (
        f"It corrects version 1: “{STATEMENT}” (value “{EXCEPTION}” → “check every delivery”)."
    )
    assert expected in text(omar)
    assert expected in html(omar)


def test_a_retirement_by_revocation_names_the_source_in_words_never_its_id(flow: Flow, smtp: Inbox):
    memo = flow.source("approval_record", external_ref="APR-2291 memo")
    memory = flow.active_rule(P9, owner="lena", sources=[memo])
    smtp.messages.clear()

    flow.ok(flow.post("rita", f"/sources/{memo}/revoke", {"reason": "withdrawn by legal"}))

    lena = _only(smtp, "lena@example.com")
    assert _subject(lena) == f"[Memgov] Retired: “{STATEMENT}”"
    assert _headline(lena) == f"“{STATEMENT}”"
    body = f"{text(lena)}\n{html(lena)}"
    assert (
        "Reason: its source approval record APR-2291 memo was revoked: withdrawn by legal" in body
    )
    assert "src_" not in body
    assert memory["id"] in body  # in the link only


def test_an_owner_who_may_not_see_the_sources_learns_only_that_a_source_was_revoked(
    flow: Flow, smtp: Inbox
):
    memo = flow.source("approval_record", external_ref="APR-2291 memo", visibility=["staff"])
    flow.active_rule(P9, owner="lena", sources=[memo])
    Membership.objects.filter(user__username="lena").update(labels=["contractors"])
    smtp.messages.clear()

    flow.ok(flow.post("rita", f"/sources/{memo}/revoke", {"reason": "withdrawn by legal"}))

    body = f"{_subject(_only(smtp, 'lena@example.com'))}\n{text(_only(smtp, 'lena@example.com'))}"
    assert "Reason: one of its sources was revoked" in body
    assert STATEMENT not in body
    assert "APR-2291 memo" not in body and "withdrawn by legal" not in body
    assert "src_" not in body
