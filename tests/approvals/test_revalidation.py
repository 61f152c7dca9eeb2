"""Re-validation (DESIGN.md, Resolver and policy; seed 001: when the model, prompt,
retrieval or tools change, important rules must be re-validated). Publishing a policy or
declaring a change re-runs the checks of every active item and flags those that fail."""

from __future__ import annotations

from django.core import mail

from approvals import checking
from approvals.models import CheckResult, Revalidation
from memory.models import Policy
from tests.approvals.support import Flow

P9 = {"project": "P-9"}
# Without the verification criterion a verified_record rule no longer outranks a confirmed
# one of the same scope: the two P-9 rules below then tie with different values.
NO_VERIFICATION = {"order": ["specificity", "kind", "valid_from"]}


def two_ranked_rules_and_one_alone(flow: Flow) -> tuple[str, str, str]:
    confirmed = flow.active_rule(P9, value="check every delivery")["id"]
    record = flow.source("business_record", content="PO-7731 v3: exception granted.")
    verified = flow.active_rule(P9, sources=[record])["id"]
    alone = flow.active_rule({"project": "P-10"})["id"]
    return confirmed, verified, alone


def test_publishing_a_policy_needs_manage_policy(flow: Flow):
    for who in ("agent", "omar", "lena", "nora"):
        response = flow.post(who, "/policy", {"precedence": NO_VERIFICATION, "reason": "try"})
        assert response.status_code == 403, who
    assert Policy.objects.filter(tenant=flow.world.tenant).count() == 1
    assert Revalidation.objects.count() == 0


def test_an_invalid_precedence_is_a_422_and_publishes_nothing(flow: Flow):
    response = flow.post("rita", "/policy", {"precedence": {"order": ["seniority"]}, "reason": "x"})

    assert response.status_code == 422
    assert "precedence" in response.json()["errors"]
    assert flow.ok(flow.get("agent", "/policy"))["version"] == "1"
    assert Revalidation.objects.count() == 0


def test_a_new_policy_is_a_new_version_and_revalidation_flags_what_now_fails(
    flow: Flow, django_capture_on_commit_callbacks
):
    confirmed, verified, alone = two_ranked_rules_and_one_alone(flow)
    mail.outbox.clear()
    body = {"precedence": NO_VERIFICATION, "reason": "verification is not a rank any more"}

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = flow.uncommitted("rita", "/policy", body)

    published = flow.ok(response, 201)
    assert published["version"] == "2"
    assert flow.ok(flow.get("agent", "/policy"))["version"] == "2"
    job = published["revalidation"]
    running = flow.ok(flow.get("rita", f"/revalidations/{job}"))
    # Three active items, superseded versions are not re-checked; nothing ran yet.
    assert (running["status"], running["total"], running["done"]) == ("running", 3, 0)

    with django_capture_on_commit_callbacks(execute=True):
        for callback in callbacks:  # the commit hands the chunks to Celery (eager here)
            callback()

    done = flow.ok(flow.get("rita", f"/revalidations/{job}"))
    assert (done["status"], done["total"], done["done"], done["failed"]) == ("done", 3, 3, 2)
    assert done["flagged"] == sorted([confirmed, verified])
    assert done["policy_version"] == "2"
    assert sorted(m.to[0] for m in mail.outbox) == ["rita@example.com", "rita@example.com"]
    assert {m.subject for m in mail.outbox} == {
        f"[Memgov] Re-validation flagged material_checks ({confirmed})",
        f"[Memgov] Re-validation flagged material_checks ({verified})",
    }
    assert flow.memory(alone)["status"] == "active"


def test_declaring_a_model_change_revalidates_every_active_item(flow: Flow):
    p9 = flow.active_rule(P9)["id"]
    p10 = flow.active_rule({"project": "P-10"})["id"]

    response = flow.post("rita", "/policy/revalidate", {"reason": "model changed"})

    assert response.status_code == 202
    job = response.json()["revalidation"]
    done = flow.ok(flow.get("rita", f"/revalidations/{job}"))
    assert (done["status"], done["total"], done["done"], done["failed"], done["flagged"]) == (
        "done",
        2,
        2,
        0,
        [],
    )
    assert done["policy_version"] == "1"
    assert [flow.memory(m)["status"] for m in (p9, p10)] == ["active", "active"]
    assert flow.get("zed", f"/revalidations/{job}").status_code == 404


def test_declaring_a_model_change_needs_manage_policy(flow: Flow):
    for who in ("agent", "omar", "lena", "nora"):
        assert flow.post(who, "/policy/revalidate", {"reason": "x"}).status_code == 403, who
    assert Revalidation.objects.count() == 0


def test_a_rule_shadowed_by_a_stronger_one_is_flagged_for_its_owner(flow: Flow):
    # The stronger rule's activation reported the changed winner as impact; afterwards the
    # weaker one is never selected in its own scope, so its applicable check fails.
    shadowed, _, _ = two_ranked_rules_and_one_alone(flow)

    job = flow.ok(flow.post("rita", "/policy/revalidate", {"reason": "prompt changed"}), 202)

    done = flow.ok(flow.get("rita", f"/revalidations/{job['revalidation']}"))
    assert (done["done"], done["failed"], done["flagged"]) == (3, 1, [shadowed])


class WorkerLost(Exception):
    """What the broker sees when a worker dies mid-task: the message comes back."""


def test_a_chunk_redelivered_after_a_crash_counts_each_item_once_and_finishes(
    flow: Flow, django_capture_on_commit_callbacks, monkeypatch
):
    first = flow.active_rule(P9)["id"]
    second = flow.active_rule({"project": "P-10"})["id"]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = flow.uncommitted("rita", "/policy/revalidate", {"reason": "tools changed"})
    job = response.json()["revalidation"]
    [deliver_chunk] = callbacks
    evaluate = checking._evaluate

    def dies_at_the_second_item(version):
        if version.item_id == second:
            raise WorkerLost("SIGKILL")
        return evaluate(version)

    # Given the first delivery checked the first item and died at the second.
    monkeypatch.setattr(checking, "_evaluate", dies_at_the_second_item)
    with django_capture_on_commit_callbacks(execute=True):
        deliver_chunk()
    monkeypatch.setattr(checking, "_evaluate", evaluate)
    half = flow.ok(flow.get("rita", f"/revalidations/{job}"))
    assert (half["status"], half["done"]) == ("running", 1)

    # When the broker delivers the chunk again.
    with django_capture_on_commit_callbacks(execute=True):
        deliver_chunk()

    # Then each item is counted once and the job is done.
    done = flow.ok(flow.get("rita", f"/revalidations/{job}"))
    assert (done["status"], done["total"], done["done"], done["failed"]) == ("done", 2, 2, 0)
    rechecked = CheckResult.objects.filter(run=CheckResult.Run.REVALIDATION)
    assert sorted({r.version.item_id for r in rechecked}) == sorted([first, second])
