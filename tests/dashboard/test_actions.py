"""Decisions made on the item page go through the services: the allowed path changes the
status, the refused path is a message with the service's status, never a 500."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.html import escape

from approvals.models import Revalidation
from audit.models import AuditEvent
from dashboard.templatetags.memgov_words import outcome_word
from memory import proposals
from memory.models import MemoryVersion, Policy, Scenario
from memory.resolution import ResolveRequest, decide, resolution_body, resolve_for
from tests.cache.conftest import free_port
from tests.conftest import later, needs
from tests.dashboard.support import Demo, demo_year


@pytest.fixture
def commit(django_capture_on_commit_callbacks: Any) -> Any:
    """Run after-commit work (checks, mail) as the worker would, before the next request."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def _head(demo: Demo, key: str) -> MemoryVersion:
    item = demo.item(key)
    return item.versions.get(number=item.head_version)


def _post(client: Client, path: str, data: dict[str, str], commit: Any) -> Any:
    with commit():
        return client.post(path, data)


def _dana_address(demo: Demo, task: str) -> Any:
    body = resolve_for(
        demo.principal("rita"),
        ResolveRequest(
            subject=str(demo.item("order_a").subject_id),
            context={"task": task},
            fields=("delivery_address",),
            valid_at=None,
            known_at=None,
            task_id=None,
            explain=False,
        ),
    )
    return [(f["value"], f["memory_id"]) for f in body["facts"]]


def test_approving_a_task_fact_runs_its_checks_and_activates_it(demo: Demo, commit: Any) -> None:
    memory_id = demo.items["order_a"]

    response = _post(
        demo.client("rita"), f"/memories/{memory_id}/approve/", {"comment": "ORD-A v2"}, commit
    )

    assert response.status_code == 302
    assert response["Location"] == f"/memories/{memory_id}/"
    head = _head(demo, "order_a")
    assert head.status == "active"
    assert head.verification == "verified_record"
    assert list(head.approvals.values_list("reviewer__username", "comment")) == [
        ("rita", "ORD-A v2")
    ]
    approved = AuditEvent.objects.get(action="memory.approved", target_id=memory_id)
    assert approved.actor == "user:rita"
    page = demo.client("rita").get(f"/memories/{memory_id}/").content.decode()
    assert "6 of 6 passed" in page


def test_the_message_after_approving_says_what_happens_next(demo: Demo, commit: Any) -> None:
    client = demo.client("rita")
    with commit():
        response = client.post(
            f"/memories/{demo.items['order_a']}/approve/", {"comment": ""}, follow=True
        )

    assert "Approved. Every approval is in: the scenario checks are running." in (
        response.content.decode()
    )


def test_an_enterprise_rule_waits_for_a_second_distinct_reviewer(demo: Demo, commit: Any) -> None:
    path = f"/memories/{demo.items['p9_rule']}/approve/"
    rita = demo.client("rita")

    first = rita.post(path, {"comment": "APR-2291 v3 read"}, follow=True)
    again = rita.post(path, {"comment": "once more"})
    second = _post(demo.client("omar"), path, {"comment": "P-9 confirmed"}, commit)

    assert "Approved (1 of 2). Waiting for another reviewer." in first.content.decode()
    assert again.status_code == 409
    assert "You have already decided on this version." in again.content.decode()
    assert second.status_code == 302
    assert _head(demo, "p9_rule").status == "active"


def test_a_reviewer_without_authority_gets_a_403_message(demo: Demo) -> None:
    memory_id = demo.items["order_a"]

    response = demo.client("lena").post(f"/memories/{memory_id}/approve/", {"comment": "ok"})

    assert response.status_code == 403
    assert "You have no authority to approve a task_fact with this scope." in (
        response.content.decode()
    )
    assert _head(demo, "order_a").status == "pending_review"


def test_rejecting_what_is_no_longer_pending_is_a_409(demo: Demo, commit: Any) -> None:
    client = demo.client("rita")
    memory_id = demo.items["order_a"]
    _post(client, f"/memories/{memory_id}/approve/", {"comment": ""}, commit)

    response = client.post(f"/memories/{memory_id}/reject/", {"reason": "too late"})

    assert response.status_code == 409
    assert "Nothing was done: it changed after this page was loaded and is now “" in (
        response.content.decode()
    )


def test_a_rejection_needs_a_reason(demo: Demo) -> None:
    client = demo.client("rita")
    path = f"/memories/{demo.items['order_a']}/reject/"

    refused = client.post(path, {"reason": ""})
    accepted = client.post(path, {"reason": "ORD-A was cancelled"})

    assert refused.status_code == 422
    assert "This field is required." in refused.content.decode()
    assert accepted.status_code == 302
    head = _head(demo, "order_a")
    assert (head.status, head.status_reason) == ("rejected", "ORD-A was cancelled")


def test_retiring_from_the_item_page_stops_resolve_returning_it(demo: Demo, commit: Any) -> None:
    client = demo.client("rita")
    memory_id = demo.items["order_a"]
    _post(client, f"/memories/{memory_id}/approve/", {"comment": ""}, commit)
    assert _dana_address(demo, "order-a") == [("4 Dock Road", memory_id)]

    response = _post(
        client,
        f"/memories/{memory_id}/retire/",
        {"reason": "customer changed the order", "in_flight": "reverify"},
        commit,
    )

    assert response.status_code == 302
    assert _head(demo, "order_a").status == "retired"
    assert _dana_address(demo, "order-a") == [("12 Elm Street", demo.items["dana_home"])]


@needs("redis")
def test_retiring_while_the_cache_is_unreachable_says_so_and_changes_nothing(
    demo: Demo, settings: Any
) -> None:
    """Fail-closed (docs/architecture.md): a retirement that could not end the cached
    answers is not made, and the reviewer is told to try again."""
    unreachable = f"redis://127.0.0.1:{free_port()}/1"
    settings.CACHES = {"default": {**settings.CACHES["default"], "LOCATION": unreachable}}

    response = demo.client("rita").post(
        f"/memories/{demo.items['dana_home']}/retire/",
        {"reason": "Dana moved", "in_flight": "continue"},
    )

    assert response.status_code == 503
    assert "nothing was changed. Try again shortly." in response.content.decode()
    assert _head(demo, "dana_home").status == "active"


def test_retiring_needs_retire_authority_over_the_scope(demo: Demo) -> None:
    response = demo.client("lena").post(
        f"/memories/{demo.items['dana_home']}/retire/",
        {"reason": "not mine", "in_flight": "continue"},
    )

    assert response.status_code == 403
    assert "Retiring this memory needs retire_memory over its scope." in response.content.decode()
    assert _head(demo, "dana_home").status == "active"


def test_a_custom_scenario_can_fail_the_checks_and_a_recheck_runs_them_again(
    demo: Demo, commit: Any
) -> None:
    client = demo.client("rita")
    memory_id = demo.items["order_a"]
    added = _post(
        client,
        f"/memories/{memory_id}/scenarios/",
        {"kind": "inapplicable", "context": "task=order-a", "expect": "does_not_apply"},
        commit,
    )
    # The preview ran again with the scenario and failed: approving must confirm it.
    _post(client, f"/memories/{memory_id}/approve/", {"comment": "", "despite": "1"}, commit)
    assert _head(demo, "order_a").status == "checks_failed"
    page = client.get(f"/memories/{memory_id}/").content.decode()
    to_checking = AuditEvent.objects.filter(action="memory.checking", target_id=memory_id)

    response = _post(client, f"/memories/{memory_id}/recheck/", {}, commit)

    assert added.status_code == 302
    assert Scenario.objects.get(version__item_id=memory_id).context == {"task": "order-a"}
    assert "Run the checks again" in page and "✗ failed" in page
    assert response.status_code == 302
    assert list(to_checking.values_list("actor", flat=True)) == ["user:rita", "user:rita"]
    assert _head(demo, "order_a").status == "checks_failed"


def test_a_scenario_with_a_malformed_context_is_refused(demo: Demo) -> None:
    response = demo.client("rita").post(
        f"/memories/{demo.items['order_a']}/scenarios/",
        {"kind": "applicable", "context": "task order-a", "expect": "applies"},
    )

    assert response.status_code == 422
    assert "“task order-a” is not dimension=value" in response.content.decode()
    assert not Scenario.objects.exists()


def test_linking_an_unresolved_mention_sends_it_to_review(demo: Demo, commit: Any) -> None:
    order = _head(demo, "order_a").source_ids
    with commit():
        held = proposals.memory_propose(
            principal=demo.agent(),
            data={
                "kind": "task_fact",
                "subject_mention": "D. Kim",
                "field": "delivery_window",
                "value": "mornings",
                "statement": "D. Kim wants order-a in the morning.",
                "scope": {"task": "order-a"},
                "owner": "sam",
                "expires_at": later(7),
                "sources": order,
            },
        )
    dana = str(demo.item("order_a").subject_id)
    entities = demo.client("rita").get("/entities/").content.decode()
    held_page = demo.client("rita").get(f"/memories/{held.item_id}/")

    link = f"/memories/{held.item_id}/link/"
    refused = demo.client("omar").post(link, {"subject": dana, "confirm": "on"})
    wrong = demo.client("rita").post(link, {"subject": "ent_nope", "confirm": "on"})
    unconfirmed = demo.client("rita").post(link, {"subject": dana})
    linked = _post(demo.client("rita"), link, {"subject": dana, "confirm": "on"}, commit)

    assert "“D. Kim”" in entities and "matched on an alias" in entities
    assert "unresolved mention “D. Kim”" in held_page.content.decode()
    assert refused.status_code == 404
    assert wrong.status_code == 422
    # Beside the field, in words (issue 43, point 10).
    beside = wrong.content.decode().split(f'action="{link}"')[1].split("</form>")[0]
    assert "No entity “ent_nope” in this tenant." in beside
    assert unconfirmed.status_code == 422
    assert linked.status_code == 302
    version = MemoryVersion.objects.get(item_id=held.item_id)
    assert (version.status, version.subject_id) == ("pending_review", dana)


def test_revoking_a_source_from_the_evidence_retires_what_rests_on_it(
    demo: Demo, commit: Any
) -> None:
    memory_id = demo.items["order_a"]
    source = _head(demo, "order_a").source_ids[0]
    data = {"memory": memory_id, "reason": "order cancelled"}

    refused = demo.client("lena").post(f"/sources/{source}/revoke/", data)
    response = _post(demo.client("rita"), f"/sources/{source}/revoke/", data, commit)

    assert refused.status_code == 403
    assert "Revoking this source needs retire_memory" in refused.content.decode()
    assert response.status_code == 302
    assert response["Location"] == f"/memories/{memory_id}/"
    assert _head(demo, "order_a").status == "retired"
    page = demo.client("rita").get(f"/memories/{memory_id}/").content.decode()
    assert "REVOKED" in page


def test_publishing_a_policy_re_validates_every_active_item(demo: Demo, commit: Any) -> None:
    form = {
        "order": "specificity, kind, verification, valid_from",
        "kind_rank": "enterprise_rule, task_fact, preference",
        "verification_rank": "verified_record, confirmed, asserted",
        "reason": "rules outrank task facts",
    }

    refused = demo.client("lena").post("/policy/publish/", form)
    response = _post(demo.client("rita"), "/policy/publish/", form, commit)

    assert refused.status_code == 403
    assert response.status_code == 302
    policy = Policy.objects.filter(tenant=demo.tenant).latest("version")
    assert (policy.version, policy.precedence["kind_rank"][0]) == (2, "enterprise_rule")
    job = Revalidation.objects.get(tenant=demo.tenant)
    assert (job.status, job.total, job.done, job.failed) == ("done", 4, 4, 0)
    progress = demo.client("rita").get(f"/policy/revalidations/{job.pk}/").content.decode()
    assert "Done: 4 of 4 re-checked" in progress
    assert "hx-trigger" not in progress


def test_an_invalid_precedence_is_shown_with_a_422(demo: Demo) -> None:
    response = demo.client("rita").post(
        "/policy/publish/",
        {
            "order": "specificity, kind",
            "kind_rank": "task_fact, enterprise_rule",
            "verification_rank": "verified_record, confirmed, asserted",
            "reason": "forgot one",
        },
    )

    assert response.status_code == 422
    page = response.content.decode()
    kinds = page.split('for="policy_kind_rank"')[1].split('for="policy_verification_rank"')[0]
    assert "Every kind must be ranked: add preference." in kinds
    assert "precedence." not in page and "Invalid content" not in page
    assert Policy.objects.filter(tenant=demo.tenant).count() == 1


def test_a_running_revalidation_keeps_polling(demo: Demo) -> None:
    response = demo.client("rita").post("/policy/revalidate/", {"reason": "model changed"})
    job = Revalidation.objects.get(tenant=demo.tenant)

    progress = demo.client("rita").get(f"/policy/revalidations/{job.pk}/").content.decode()

    assert response.status_code == 302
    assert job.status == "running"
    assert "Re-checking active memories: 0 of 4" in progress
    assert 'hx-trigger="every 2s"' in progress


def test_the_audit_log_is_for_people_with_view_audit(demo: Demo) -> None:
    refused = demo.client("omar").get("/audit/")
    rita = demo.client("rita")
    filtered = rita.get(f"/audit/?target={demo.items['order_a']}").content.decode()
    verified = rita.post("/audit/verify/").content.decode()

    assert refused.status_code == 403
    assert "Reading the audit trail needs the view_audit permission." in refused.content.decode()
    assert "memory.proposed" in filtered and "tenant.created" not in filtered
    assert "The chain holds" in verified


def _told(demo: Demo, subject: str, valid_at: datetime, known_at: datetime | None) -> Any:
    """What the resolver itself answers, to hold the page to "exactly what resolve says"."""
    request = ResolveRequest(
        subject=subject,
        context={},
        fields=None,
        valid_at=valid_at,
        known_at=known_at,
        task_id=None,
        explain=True,
    )
    return resolution_body(decide(demo.principal("rita"), request, timezone.now()), explain=True)


def test_time_travel_answers_what_resolve_would_on_both_time_axes(demo: Demo) -> None:
    sarah = str(demo.item("sarah_pune").subject_id)
    year = demo_year(demo)
    april, february = datetime(year, 4, 15, tzinfo=UTC), datetime(year, 2, 1, tzinfo=UTC)
    client = demo.client("rita")
    url = f"/browse/?tt_subject={sarah}&tt_context=&tt_valid_at="

    in_april = client.get(f"{url}{year}-04-15T00:00&tt_known_at=").content.decode()
    in_february = client.get(f"{url}{year}-02-01T00:00&tt_known_at=").content.decode()
    before_known = client.get(f"{url}{year}-04-15T00:00&tt_known_at=2000-01-01T00:00")

    assert "<strong>Pune</strong>" in in_april and "<strong>Mumbai</strong>" not in in_april
    assert "<strong>Mumbai</strong>" in in_february and "<strong>Pune</strong>" not in in_february
    for page, valid_at in ((in_april, april), (in_february, february)):
        told = _told(demo, sarah, valid_at, None)
        for fact in told["facts"]:
            assert f"<strong>{escape(fact['value'])}</strong>" in page
            assert escape(fact["reason"]) in page
        for gap in told["abstentions"]:
            said = outcome_word(gap["reason"])  # in words (issue 43, point 14)
            assert f"<strong>{said}</strong> — {escape(gap['detail'])}" in page
        assert ("Plans (never the current state)" in page) == bool(told["plans"])
        assert f"Everything considered ({len(told['considered'])})" in page
    assert "Nothing is known about this subject at that time." in before_known.content.decode()
    assert _told(demo, sarah, april, datetime(2000, 1, 1, tzinfo=UTC))["facts"] == []


def test_time_travel_for_an_unknown_subject_is_a_404(demo: Demo) -> None:
    response = demo.client("rita").get("/browse/?tt_subject=ent_elsewhere")

    assert response.status_code == 404
    assert "No entity ent_elsewhere." in response.content.decode()


def test_the_overview_counts_todays_approval(demo: Demo, commit: Any) -> None:
    _post(demo.client("rita"), f"/memories/{demo.items['order_a']}/approve/", {}, commit)

    body = demo.client("rita").get("/overview/").content.decode()

    assert '<strong>Approvals per day</strong> <span class="muted small">total 1</span>' in body
    assert '<strong>Pending review by age</strong> <span class="muted small">total 2</span>' in (
        body
    )
