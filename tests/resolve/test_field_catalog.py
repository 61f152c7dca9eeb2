"""The field catalog (issue 35): a tenant admin says what a field's value looks like, which
kinds and scope it takes, its default expiry, and which system holds its committed state.
Proposals are held to it, and a field owned by another system is only advisory in memory."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.grants import permission_grant
from audit.models import AuditEvent
from memory.models import FieldDefinition, MemoryVersion
from tests.api.support import record_source, task_fact_body
from tests.conftest import World, later, needs
from tests.mcp.support import InProcess, answer, problem
from tests.resolve.conftest import Story, resolve

ORDER_SERVICE = {
    "name": "Order service",
    "url": "https://orders.example.com/api/orders",
    "tool": "orders.get_order",
}
ADDRESS_FIELD: dict[str, Any] = {
    "description": "Where an order is delivered.",
    "value_schema": {"type": "string", "minLength": 3},
    "kinds": ["task_fact", "preference"],
    "required_scope": ["task"],
    "default_expiry_days": 30,
    "authoritative_system": ORDER_SERVICE,
}


@pytest.fixture
def admin(world: World) -> World:
    """rita administers the tenant (``tenant_admin``), as create_user --staff grants it."""
    permission_grant(user=world.users["rita"], tenant=world.tenant, codename="tenant_admin")
    return world


def define(world: World, name: str = "delivery_address", **body: Any) -> Any:
    response = world.client("rita").put(
        f"/api/v1/fields/{name}", {**ADDRESS_FIELD, **body}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()


def test_a_tenant_admin_defines_a_field_and_every_key_reads_it(admin):
    body = define(admin)

    assert {k: v for k, v in body.items() if k != "updated_at"} == {
        "name": "delivery_address",
        **ADDRESS_FIELD,
        "kinds": ["preference", "task_fact"],
        "updated_by": "user:rita",
    }
    agent = admin.client("agent")
    assert agent.get("/api/v1/fields/delivery_address").json()["authoritative_system"] == (
        ORDER_SERVICE
    )
    assert [f["name"] for f in agent.get("/api/v1/fields").json()["results"]] == [
        "delivery_address"
    ]
    event = AuditEvent.objects.get(action="field.created")
    assert (event.actor, event.target_id, event.data["authoritative"]) == (
        "user:rita",
        "delivery_address",
        True,
    )


@pytest.mark.parametrize("persona", ["agent", "nora", "omar"])
def test_only_a_tenant_admin_may_change_the_catalog(admin, persona):
    response = admin.client(persona).put(
        "/api/v1/fields/delivery_address", ADDRESS_FIELD, format="json"
    )

    assert response.status_code == 403
    assert "tenant_admin" in response.json()["detail"]
    assert not FieldDefinition.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="field.").exists()


def test_another_tenants_catalog_is_not_seen(admin):
    define(admin)

    zed = admin.client("zed")
    assert zed.get("/api/v1/fields/delivery_address").status_code == 404
    assert zed.get("/api/v1/fields").json() == {"results": []}


def test_a_schema_that_is_not_json_schema_is_refused_and_nothing_changes(admin):
    response = admin.client("rita").put(
        "/api/v1/fields/delivery_address",
        {"value_schema": {"type": "postcode"}, "kinds": ["rumour"], "contxt": 1},
        format="json",
    )

    assert response.status_code == 422
    assert set(response.json()["errors"]) == {"kinds.0", "contxt"}
    response = admin.client("rita").put(
        "/api/v1/fields/delivery_address", {"value_schema": {"type": "postcode"}}, format="json"
    )
    assert response.status_code == 422
    assert "value_schema" in response.json()["errors"]
    assert not FieldDefinition.objects.exists()


def test_a_proposal_that_breaks_the_catalog_is_422_naming_the_field(admin):
    define(admin)
    agent = admin.client("agent")
    dana = agent.post("/api/v1/entities", {"kind": "customer", "name": "Dana"}, "json").json()
    record = record_source(agent, "business_record", "Order order-a: deliver to 4 Dock Road.")

    response = agent.post(
        "/api/v1/memories",
        task_fact_body(dana["id"], record, value=4, kind="enterprise_rule", scope={"p": "x"}),
        format="json",
    )

    assert response.status_code == 422
    errors = response.json()["errors"]
    assert "field 'delivery_address'" in errors["value"][0]
    assert "allows only preference, task_fact for field 'delivery_address'" in errors["kind"][0]
    assert "requires task in the scope of field 'delivery_address'" in errors["scope"][0]
    assert not MemoryVersion.objects.exists()


def test_mcp_proposals_are_held_to_the_same_catalog(admin):
    define(admin)
    agent = InProcess(admin.keys["agent"])
    rest = admin.client("agent")
    dana = rest.post("/api/v1/entities", {"kind": "customer", "name": "Dana"}, "json").json()
    record = record_source(rest, "business_record", "Order order-a: deliver to 4 Dock Road.")

    body = problem(
        agent.call("propose_memory", task_fact_body(dana["id"], record, value=["4", "Dock"])), 422
    )

    assert (
        "does not match the field catalog's schema for field 'delivery_address'"
        in (body["errors"]["value"][0])
    )


def test_an_omitted_expiry_takes_the_catalog_default_and_nothing_else_does(admin):
    define(admin)
    agent = admin.client("agent")
    dana = agent.post("/api/v1/entities", {"kind": "customer", "name": "Dana"}, "json").json()
    record = record_source(agent, "business_record", "Order order-a: deliver to 4 Dock Road.")
    body = task_fact_body(dana["id"], record)
    del body["expires_at"]

    response = agent.post("/api/v1/memories", body, format="json")

    assert response.status_code == 201, response.content
    version = MemoryVersion.objects.get()
    expected = timezone.now() + timedelta(days=30)
    assert version.expires_at is not None
    assert abs((version.expires_at - expected).total_seconds()) < 60
    refused = agent.post("/api/v1/memories", {**body, "field": "gate_code"}, format="json")
    assert refused.status_code == 422
    assert "no default expiry" in refused.json()["errors"]["expires_at"][0]


@pytest.fixture
def order_address(story: Story, dana: str) -> MemoryVersion:
    record = story.source("Order order-a: deliver to 4 Dock Road.", "business_record")
    return story.activate(
        kind="task_fact",
        subject=dana,
        field="delivery_address",
        value="4 Dock Road",
        scope={"task": "order-a"},
        expires_at=later(3),
        sources=[record],
    )


@needs("redis")
def test_resolve_marks_an_authoritative_field_advisory_once_the_catalog_says_so(
    admin, dana, order_address, settings
):
    """The answer cached before the catalog change is not served after it."""
    settings.MEMGOV_RESOLVE_CACHE = True
    agent = admin.client("agent")
    before = resolve(agent, subject=dana, context={"task": "order-a"})
    again = resolve(agent, subject=dana, context={"task": "order-a"})
    assert "advisory" not in before["facts"][0]
    assert "advisory" not in again["facts"][0]

    define(admin)
    after = resolve(agent, subject=dana, context={"task": "order-a"})

    fact = after["facts"][0]
    assert (fact["value"], fact["advisory"], fact["authoritative_system"]) == (
        "4 Dock Road",
        True,
        ORDER_SERVICE,
    )
    define(admin, authoritative_system=None)
    plain = resolve(agent, subject=dana, context={"task": "order-a"})
    assert "advisory" not in plain["facts"][0]


def test_a_field_of_another_tenant_marks_nothing_here(admin, dana, order_address):
    FieldDefinition.objects.create(
        tenant=admin.other_tenant,
        name="delivery_address",
        authority_name="Their order service",
        updated_by="user:zed",
        updated_at=timezone.now(),
    )

    body = resolve(admin.client("agent"), subject=dana, context={"task": "order-a"})

    assert "advisory" not in body["facts"][0]


def test_an_agent_reads_the_catalog_over_mcp_before_proposing(admin):
    define(admin)
    agent = InProcess(admin.keys["agent"])

    one = answer(agent.call("describe_fields", {"name": "delivery_address"}))
    every = answer(agent.call("describe_fields", {}))

    assert one == every
    assert one["results"][0]["authoritative_system"] == ORDER_SERVICE
    assert one["results"][0]["value_schema"] == {"type": "string", "minLength": 3}
    problem(agent.call("describe_fields", {"name": "gate_code"}), 404)
