"""Live labels (issue 9, point 8): when the original data's access changes, a user with
``retire_memory`` changes the source's labels, and every memory built on it follows on
the next resolve. Sources stay otherwise immutable."""

from __future__ import annotations

from typing import Any

import pytest

from accounts import tenancy
from accounts.people import membership_relabel
from audit.models import AuditEvent
from memory import entities, sources
from tests.conftest import World

API = "/api/v1"
PROBLEM = "application/problem+json"
ORDER_A = {"task": "order-a"}


@pytest.fixture
def order(world: World, django_capture_on_commit_callbacks: Any) -> dict[str, str]:
    """Dana's order-a goes to her office: a task_fact on an order record, active."""
    agent = world.principal("agent")
    dana = entities.entity_create(principal=agent, kind="customer", name="Dana Kim").pk
    record = sources.source_record(
        principal=agent,
        data={"kind": "business_record", "content": "ORD-A ships to 4 Dock Road."},
    ).pk
    body = {
        "kind": "task_fact",
        "subject": dana,
        "field": "delivery_address",
        "value": "4 Dock Road",
        "statement": "Order order-a goes to 4 Dock Road.",
        "scope": ORDER_A,
        "owner": "rita",
        "expires_at": "2099-01-01T00:00:00Z",
        "sources": [record],
    }
    with django_capture_on_commit_callbacks(execute=True):
        memory = world.client("agent").post(f"{API}/memories", body, format="json").json()
        world.client("rita").post(f"{API}/memories/{memory['id']}/approve", {}, format="json")
    return {"dana": dana, "record": record, "memory": memory["id"]}


def change(world: World, who: str, source: str, body: Any, on_commit: Any) -> Any:
    with on_commit(execute=True):
        return world.client(who).post(f"{API}/sources/{source}/visibility", body, format="json")


def facts(world: World, who: str, subject: str) -> list[Any]:
    body = {"subject": subject, "context": ORDER_A}
    response = world.client(who).post(f"{API}/resolve", body, format="json")
    assert response.status_code == 200, response.content
    return [f["value"] for f in response.json()["facts"]]


def test_labels_narrowed_on_a_source_hide_the_item_from_the_next_resolve(
    world, order, django_capture_on_commit_callbacks
):
    assert facts(world, "agent", order["dana"]) == ["4 Dock Road"]
    finance_key = tenancy.api_key_create(
        tenant=world.tenant, agent_name="finance-bot", labels=["finance"]
    )[1]

    response = change(
        world,
        "rita",
        order["record"],
        {"visibility": ["finance"], "reason": "ORD-A moved to the finance system"},
        django_capture_on_commit_callbacks,
    )

    assert response.status_code == 200, response.content
    assert response.json()["id"] == order["record"]
    assert response.json()["visibility"] == ["finance"]
    assert response.json()["content"] == "ORD-A ships to 4 Dock Road."
    assert facts(world, "agent", order["dana"]) == []  # staff lacks the label now
    world.keys["finance"] = finance_key
    assert facts(world, "finance", order["dana"]) == ["4 Dock Road"]
    [event] = AuditEvent.objects.filter(action="source.visibility_changed")
    assert event.actor == "user:rita"
    assert (event.target_id, event.data["before"], event.data["after"]) == (
        order["record"],
        ["*"],
        ["finance"],
    )
    assert event.data["memories"] == [order["memory"]]


def test_labels_widened_again_bring_the_item_back(world, order, django_capture_on_commit_callbacks):
    narrow = {"visibility": ["finance"], "reason": "moved"}
    wide = {"visibility": ["staff", "finance"], "reason": "shared with staff again"}
    # Rita must hold finance to see (and so change) the source once narrowed.
    membership_relabel(user=world.users["rita"], labels=["staff", "finance"])
    change(world, "rita", order["record"], narrow, django_capture_on_commit_callbacks)
    assert facts(world, "agent", order["dana"]) == []

    response = change(world, "rita", order["record"], wide, django_capture_on_commit_callbacks)

    assert response.status_code == 200, response.content
    assert response.json()["visibility"] == ["finance", "staff"]
    assert facts(world, "agent", order["dana"]) == ["4 Dock Road"]


def test_a_rule_built_on_the_source_keeps_passing_its_checks_after_the_change(
    world, order, django_capture_on_commit_callbacks
):
    body = {"visibility": ["staff"], "reason": "staff only"}
    change(world, "rita", order["record"], body, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        job = world.client("rita").post(
            f"{API}/policy/revalidate", {"reason": "labels changed"}, format="json"
        )

    report = world.client("rita").get(f"{API}/revalidations/{job.json()['revalidation']}")
    assert (report.json()["status"], report.json()["failed"]) == ("done", 0)


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("rita", 200),  # retire_memory on the tenant
        ("omar", 403),  # retire_memory on project P-9 only
        ("nora", 403),  # a user without permissions
        ("agent", 403),  # agents never change labels
        ("zed", 404),  # another tenant's user: the source does not exist for them
    ],
)
def test_who_may_change_a_source_s_labels(
    world, order, django_capture_on_commit_callbacks, who: str, status: int
):
    body = {"visibility": ["finance"], "reason": "moved"}

    response = change(world, who, order["record"], body, django_capture_on_commit_callbacks)

    assert response.status_code == status, response.content
    if status != 200:
        assert response["Content-Type"] == PROBLEM
        assert facts(world, "agent", order["dana"]) == ["4 Dock Road"]
        assert not AuditEvent.objects.filter(action="source.visibility_changed").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"visibility": [], "reason": "x"}, "visibility"),
        ({"visibility": "finance", "reason": "x"}, "visibility"),
        ({"visibility": [""], "reason": "x"}, "visibility.0"),
        ({"visibility": [{"label": "finance"}], "reason": "x"}, "visibility.0"),
        ({"visibility": ["finance"]}, "reason"),
    ],
    ids=["empty", "string", "blank-label", "object-label", "no-reason"],
)
def test_bad_labels_are_a_422_naming_the_field(
    world, order, django_capture_on_commit_callbacks, body: Any, field: str
):
    response = change(world, "rita", order["record"], body, django_capture_on_commit_callbacks)

    assert response.status_code == 422, response.content
    assert response["Content-Type"] == PROBLEM
    assert field in response.json()["errors"]


def test_an_unknown_source_is_a_404(world, django_capture_on_commit_callbacks):
    body = {"visibility": ["finance"], "reason": "moved"}

    response = change(world, "rita", "src_nope", body, django_capture_on_commit_callbacks)

    assert response.status_code == 404


def test_sources_stay_otherwise_immutable(world, order):
    client = world.client("rita")
    for method in (client.put, client.patch, client.delete):
        response = method(f"{API}/sources/{order['record']}", {"visibility": ["x"]}, format="json")
        assert response.status_code == 405
