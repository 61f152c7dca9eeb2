"""The field catalog page: every person of the tenant reads it; a tenant admin defines a
field through the same answer the REST PUT gives (audited, validated)."""

from __future__ import annotations

from django.test import Client

from accounts.grants import permission_grant
from audit.models import AuditEvent
from memory.models import FieldDefinition
from tests.conftest import World

FORM = {
    "name": "delivery_address",
    "description": "Where an order is delivered.",
    "value_schema": '{"type": "string"}',
    "kinds": ["task_fact"],
    "required_scope": "task",
    "default_expiry_days": "30",
    "system_name": "Order service",
    "system_url": "",
    "system_tool": "orders.get_order",
}


def signed_in(world: World, name: str) -> Client:
    client = Client()
    client.force_login(world.users[name])
    return client


def test_a_tenant_admin_defines_an_authoritative_field_from_the_page(world):
    permission_grant(user=world.users["rita"], tenant=world.tenant, codename="tenant_admin")
    rita = signed_in(world, "rita")

    saved = rita.post("/fields/save/", FORM)

    assert saved.status_code == 302
    field = FieldDefinition.objects.get(tenant=world.tenant, name="delivery_address")
    assert (field.kinds, field.required_scope, field.authority_tool) == (
        ["task_fact"],
        ["task"],
        "orders.get_order",
    )
    assert AuditEvent.objects.filter(action="field.created", actor="user:rita").exists()
    page = signed_in(world, "nora").get("/fields/").content.decode()
    assert "Order service" in page and "tool orders.get_order" in page
    assert "Define or change a field" not in page  # nora may read, not edit


def test_a_person_without_tenant_admin_cannot_save_and_bad_schemas_are_refused(world):
    refused = signed_in(world, "omar").post("/fields/save/", FORM)
    assert refused.status_code == 403
    permission_grant(user=world.users["rita"], tenant=world.tenant, codename="tenant_admin")

    bad = signed_in(world, "rita").post("/fields/save/", {**FORM, "value_schema": '{"type": 5}'})

    assert bad.status_code == 422
    assert "value_schema" in bad.content.decode()
    assert not FieldDefinition.objects.exists()
