"""Who is told what by email, after commit (docs/design.md, Notifications): reviewers with
authority over the item's scope get new pending items — never the proposer, never a
reviewer of another project — batched into a digest when many wait; each (event,
recipient) is mailed once, however often the task is delivered."""

from __future__ import annotations

from django.core import mail

from approvals import tasks
from approvals.models import Notification
from tests.approvals.support import Flow, head, person


def recipients() -> list[str]:
    return sorted(address for message in mail.outbox for address in message.to)


def test_a_p9_rule_is_announced_to_its_reviewers_and_not_to_a_reviewer_of_p10(flow: Flow):
    person(flow.world, "pia", "review_enterprise_rule@project=P-10")
    mail.outbox.clear()

    memory = flow.rule({"project": "P-9"})

    # rita and lena review rules tenant-wide, omar on P-9; pia only on P-10, nora nothing.
    assert recipients() == ["lena@example.com", "omar@example.com", "rita@example.com"]
    omar = next(m for m in mail.outbox if m.to == ["omar@example.com"])
    assert omar.subject == f"[Memgov] Waiting for your review: “{memory['statement']}”"
    assert memory["id"] in omar.body  # in the link
    assert omar.alternatives[0][1] == "text/html"  # type: ignore[attr-defined]


def test_a_p10_rule_is_announced_to_the_p10_reviewer_and_not_to_omar(flow: Flow):
    person(flow.world, "pia", "review_enterprise_rule@project=P-10")
    mail.outbox.clear()

    flow.rule({"project": "P-10"})

    assert recipients() == ["lena@example.com", "pia@example.com", "rita@example.com"]


def test_a_task_fact_is_not_announced_to_a_reviewer_of_another_kind(flow: Flow):
    mail.outbox.clear()

    flow.propose("task_fact", {"task": "renewal-3", "project": "P-9"})

    assert recipients() == ["omar@example.com", "rita@example.com"]  # not lena


def test_the_proposer_is_never_told_about_their_own_proposal(flow: Flow):
    mail.outbox.clear()

    flow.rule({"project": "P-9"}, who="rita")

    assert recipients() == ["lena@example.com", "omar@example.com"]


def test_a_reviewer_with_three_unannounced_items_gets_one_digest(
    flow: Flow, django_capture_on_commit_callbacks
):
    # Given three proposals committed before any notification task ran (a busy queue).
    mail.outbox.clear()
    ids = []
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        for task in ("renewal-3", "renewal-4", "renewal-5"):
            body = flow.body("enterprise_rule", {"project": "P-9", "task": task})
            ids.append(flow.uncommitted("agent", "/memories", body).json()["id"])

    with django_capture_on_commit_callbacks(execute=True):
        for callback in callbacks:  # preview checks and one notify task per proposal
            callback()

    # Then each reviewer gets one digest naming all three, and nothing else.
    assert recipients() == ["lena@example.com", "omar@example.com", "rita@example.com"]
    assert {m.subject for m in mail.outbox} == {"[Memgov] 3 memories wait for your review"}
    [omar] = [m for m in mail.outbox if m.to == ["omar@example.com"]]
    assert all(memory_id in omar.body for memory_id in ids)


def test_two_items_are_announced_one_by_one(flow: Flow):
    mail.outbox.clear()

    for task in ("renewal-3", "renewal-4"):
        flow.rule({"project": "P-9", "task": task})

    omar = [m.subject for m in mail.outbox if m.to == ["omar@example.com"]]
    assert len(omar) == 2
    assert all(subject.startswith("[Memgov] Waiting for your review") for subject in omar)


def test_the_notify_task_delivered_twice_sends_once(flow: Flow):
    memory = flow.rule({"project": "P-9"})
    version = head(memory["id"])
    sent = len(mail.outbox)

    again = tasks.notify_pending_review.apply(args=(version.pk,)).get()

    assert (again, len(mail.outbox)) == (0, sent)
    assert Notification.objects.filter(event=f"pending:{version.pk}").count() == 3


def test_the_checks_failed_notice_is_sent_once_to_the_owner_and_each_approver(flow: Flow):
    too_broad = {"kind": "inapplicable", "context": {"project": "P-9"}, "expect": "does_not_apply"}
    memory = flow.rule({"project": "P-9"}, scenarios=[too_broad], owner="omar")
    flow.approve(memory["id"], "rita", "lena")
    version = head(memory["id"])

    assert tasks.notify_checks_failed.apply(args=(version.pk,)).get() == 0

    failed = [m for m in mail.outbox if m.subject.startswith("[Memgov] Checks failed")]
    assert [m.to for m in failed] == [["omar@example.com"]]
    approvers = [m.to for m in mail.outbox if "did not take effect" in m.subject]
    assert sorted(approvers) == [["lena@example.com"], ["rita@example.com"]]
