"""The client's read-side calls (issue 35) against the live server: the field catalog,
a context block that names the order service, and a clarified "send it there"."""

from __future__ import annotations

from memory.grants import permission_grant
from tests.conftest import iso, later


def test_catalog_context_and_clarification_through_the_client(connect, world):
    permission_grant(user=world.users["rita"], tenant=world.tenant, codename="tenant_admin")
    rita, agent = connect("rita"), connect("agent")
    defined = rita.define_field("delivery_address", authoritative_system={"name": "Order service"})
    dana = agent.create_entity(kind="customer", name="Dana Kim")
    record = agent.record_source(kind="business_record", content="Order order-b: send it there.")
    held = agent.propose_memory(
        kind="task_fact",
        subject=dana["id"],
        field="delivery_address",
        value_mention="there",
        value_options=[{"label": "office", "value": "4 Dock Road"}],
        statement="Order order-b goes to the office.",
        scope={"task": "order-b"},
        owner="rita",
        expires_at=iso(later(7)),
        sources=[record["id"]],
    )

    clarified = agent.clarify(held["id"], choice="opt_1")
    block = agent.build_context([dana["id"]], context={"task": "order-b"}, purpose="action")

    assert defined["authoritative_system"]["name"] == "Order service"
    assert agent.list_fields()["results"] == [agent.get_field("delivery_address")]
    assert held["needs_clarification"]["question"] == ("Which delivery_address does 'there' mean?")
    assert (clarified["status"], clarified["value"]) == ("pending_review", "4 Dock Road")
    assert block["facts"] == [] and block["pending"][0]["memory_id"] == held["id"]
    assert block["text"].startswith("Memgov context (action; task=order-b; policy ")
    small = agent.build_context([dana["id"]], max_tokens=100, encoding="o200k_base")
    assert small["tokens"]["encoding"] == "o200k_base" and small["tokens"]["used"] <= 100
