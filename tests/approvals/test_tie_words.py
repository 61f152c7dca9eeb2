"""Issue 43, point 3: a tie is called a tie. The failure sentence says "ties with
<statement>" (not the own-scope check a tie also fails), and the owner's email names what
fixes it: replacing or retiring the older memory, never a correction."""

from __future__ import annotations

from approvals import tasks
from approvals.explain import failure_for, why_failed
from approvals.models import CheckResult
from dashboard.impact import check_views
from tests.approvals.support import Flow, head
from tests.mailserver import Inbox, html, smtp, text

__all__ = ["smtp"]  # the fixture, used by name

P9 = {"project": "P-9"}
OLDER = "Every P-9 delivery is checked."
NEWER = "Renewals follow exception APR-2291."


def _tie(flow: Flow) -> str:
    flow.active_rule(P9, value="check every delivery", statement=OLDER, owner="lena")
    new = flow.rule(P9, owner="omar")
    flow.approve(new["id"], "rita", "lena")
    assert flow.memory(new["id"])["status"] == "checks_failed"
    return str(new["id"])


def test_the_failure_sentence_of_a_tie_says_it_ties_with_the_other_statement(flow: Flow):
    memory_id = _tie(flow)

    sentence = failure_for(flow.world.principal("rita"), head(memory_id))

    assert sentence == (
        f"“{NEWER}” failed its checks: it ties with “{OLDER}” where project is P-9, so agents "
        "would get no answer there. 1 other check failed too."
    )


def test_why_a_tie_failed_names_replacing_not_a_correction(flow: Flow):
    memory_id = _tie(flow)
    [tie] = CheckResult.objects.filter(
        version=head(memory_id), run="gate", scenario__kind="regression"
    )

    why = why_failed(tie.scenario)

    assert why.startswith("It ties with the other memory")
    assert "replacing the older one with this one" in why
    assert "correct" not in why


def test_the_owner_s_email_about_a_tie_names_replacing_or_retiring_the_older_one(
    flow: Flow, smtp: Inbox
):
    memory_id = _tie(flow)
    tasks.notify_checks_failed.apply(args=(head(memory_id).pk,)).get()  # sent once

    [message] = [
        m for m in smtp.messages if m["To"] == "omar@example.com" and "Checks" in m["Subject"]
    ]
    body = " ".join(text(message).split())
    assert f"it ties with “{OLDER}”" in body
    assert (
        f"What fixes it: it ties with “{OLDER}”, so a correction does not help. A reviewer who "
        "may retire the older memory replaces it with this one in one step on its page"
    ) in body
    assert "propose a correction" not in body.lower()
    assert "Propose a correction" not in html(message)


def test_the_own_scope_failure_of_a_tie_points_at_the_tie_not_at_a_correction(flow: Flow):
    """A tie also fails "applicable: its own scope" (no answer there): the checks panel
    says the tie is the cause, not that the owner should correct its scope."""
    memory_id = _tie(flow)
    version = head(memory_id)
    gate = CheckResult.objects.filter(version=version, run="gate")

    views = check_views(flow.world.principal("rita"), version, gate)

    [own] = [v for v in views if v.result.scenario["name"] == "applicable: its own scope"]
    assert own.why.startswith("Agents asking in its own scope would get no answer while it ties")
    assert "correct its scope" not in own.why
