"""A caller sees an item only if it may see every source (and the item's own visibility);
explain lists what was considered, never what the caller may not see."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from accounts import tenancy
from approvals.services import memory_retire
from core.models import ApiKey
from core.principals import Principal
from memory.models import MemoryItem
from tests.resolve.conftest import outcomes, resolve, winners


@pytest.fixture
def payroll(world) -> tuple[ApiKey, APIClient]:
    """An agent of the finance team: it holds the label the staff agent lacks."""
    key, raw = tenancy.api_key_create(
        tenant=world.tenant, agent_name="payroll", labels=["staff", "finance"]
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return key, client


def test_item_with_a_finance_source_is_invisible_to_a_staff_key(world, dana, home, refund_account):
    body = resolve(world.client("agent"), subject=dana, explain=True)

    assert winners(body) == {"delivery_address": "12 Elm Street"}
    assert outcomes(body) == {home.item_id: "selected"}
    assert body["abstentions"] == []
    text = json.dumps(body)
    assert refund_account.item_id not in text
    assert "refund_account" not in text
    assert "DE89" not in text


def test_asking_for_the_hidden_field_by_name_reveals_nothing(world, dana, refund_account):
    body = resolve(world.client("agent"), subject=dana, fields=["refund_account"], explain=True)

    assert body["facts"] == []
    assert body["considered"] == []
    assert body["abstentions"] == [
        {
            "field": "refund_account",
            "reason": "no_applicable_fact",
            "detail": "no memory for refund_account applies to this context",
        }
    ]


def test_a_finance_key_sees_the_item_and_its_explanation(dana, home, refund_account, payroll):
    _, client = payroll

    body = resolve(client, subject=dana, explain=True)

    assert winners(body) == {"delivery_address": "12 Elm Street", "refund_account": "DE89 3704"}
    assert outcomes(body) == {home.item_id: "selected", refund_account.item_id: "selected"}


def test_past_access_grants_nothing_a_key_s_changed_labels_apply_to_its_next_request(
    dana, refund_account, payroll, django_capture_on_commit_callbacks
):
    key, client = payroll
    before = resolve(client, subject=dana, fields=["refund_account"])

    key.labels = ["staff"]
    with django_capture_on_commit_callbacks(execute=True):
        key.save(update_fields=["labels"])
    after = resolve(client, subject=dana, fields=["refund_account"])

    assert winners(before) == {"refund_account": "DE89 3704"}
    assert after["facts"] == []


def test_the_items_own_visibility_narrows_a_public_source(world, story, dana, payroll):
    finance = story.principal("agent", labels=("staff", "finance"))
    note = story.activate(
        kind="preference",
        subject=dana,
        field="credit_limit",
        value=5000,
        scope={},
        expires_at=None,
        visibility=["finance"],
        by=finance,
    )

    staff = resolve(world.client("agent"), subject=dana, explain=True)
    finance_view = resolve(payroll[1], subject=dana)

    assert note.item_id not in json.dumps(staff)
    assert winners(finance_view) == {"credit_limit": 5000}


def test_explain_does_not_change_the_answer(world, dana, home, refund_account):
    client = world.client("agent")

    plain = resolve(client, subject=dana, context={"task": "order-a"})
    explained = resolve(client, subject=dana, context={"task": "order-a"}, explain=True)

    for key in ("facts", "abstentions", "plans", "policy_version"):
        assert plain[key] == explained[key]


def test_a_task_record_shows_another_principal_only_what_it_may_see(
    world, dana, home, refund_account, payroll
):
    _, finance = payroll
    resolve(finance, subject=dana, task_id="refund-7")

    theirs = finance.get("/api/v1/tasks/refund-7").json()
    staff = world.client("agent").get("/api/v1/tasks/refund-7").json()

    assert sorted(u["memory_id"] for u in theirs["used"]) == sorted(
        [home.item_id, refund_account.item_id]
    )
    assert [u["memory_id"] for u in staff["used"]] == [home.item_id]
    assert "refund_account" not in json.dumps(staff)


def test_a_task_told_only_hidden_facts_is_unknown_to_who_may_not_see_them(
    world, dana, home, refund_account, payroll
):
    _, finance = payroll
    resolve(finance, subject=dana, fields=["refund_account"], task_id="refund-9")

    theirs = finance.get("/api/v1/tasks/refund-9")
    staff = world.client("agent").get("/api/v1/tasks/refund-9")

    assert [u["memory_id"] for u in theirs.json()["used"]] == [refund_account.item_id]
    assert staff.status_code == 404
    assert staff.json() == world.client("agent").get("/api/v1/tasks/never-ran").json() | {
        "detail": staff.json()["detail"]
    }
    assert "refund-9" in staff.json()["detail"]


def test_a_hidden_retirement_still_says_reverify_but_not_what(
    world, story, dana, home, refund_account, payroll
):
    _, finance = payroll
    resolve(finance, subject=dana, task_id="refund-8")
    rita = world.principal("rita")
    rita_in_finance = Principal(
        tenant=rita.tenant, name=rita.name, labels=frozenset({"staff", "finance"}), user=rita.user
    )
    with story.on_commit(execute=True):
        memory_retire(
            principal=rita_in_finance,
            item=MemoryItem.objects.get(pk=refund_account.item_id),
            reason="account closed",
        )

    theirs = finance.get("/api/v1/tasks/refund-8").json()
    staff = world.client("agent").get("/api/v1/tasks/refund-8").json()

    assert theirs["needs_reverification"] is True
    assert [(r["memory_id"], r["event"]) for r in theirs["reasons"]] == [
        (refund_account.item_id, "retired")
    ]
    assert staff["needs_reverification"] is True
    assert staff["reasons"] == []
