"""The client's read-side calls (issue 35) against the live server: the field catalog,
a context block that names the order service, and a clarified "send it there"."""

from __future__ import annotations

from typing import Any

from accounts.grants import permission_grant
from memgov_client import Memgov
from memgov_client import types as t
from tests.client.test_async import _run
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


def _northwind_story(agent: Memgov) -> tuple[t.Entity, t.Entity, t.Memory]:
    """Dana works at Northwind: a fact about Dana whose value references Northwind."""
    northwind = agent.create_entity(kind="supplier", name="Northwind Traders", external_ref="NW-17")
    dana = agent.create_entity(kind="customer", name="Dana Kim")
    held = agent.propose_memory(
        kind="preference",
        subject=dana["id"],
        field="employer",
        value={"entity": northwind["id"]},
        statement="Dana Kim works at Northwind Traders.",
        scope={},
        owner="rita",
        expires_at=None,
    )
    return northwind, dana, held


def test_search_facts_proposals_kinds_and_refs_through_the_client(connect):
    agent = connect("agent")
    northwind, dana, proposed = _northwind_story(agent)

    found = agent.search("Northwind", kind="preference")
    candidates = list(agent.iter_search("Dana", page_size=1))
    facts = agent.list_entity_facts(northwind["id"])
    every_fact = list(agent.iter_entity_facts(dana["id"], page_size=1))
    mine = agent.list_my_proposals(status=proposed["status"])
    kinds = agent.entity_kinds()
    by_ref = agent.match_external_ref("NW-17")

    assert [(c["type"], c["id"]) for c in found["results"]] == [("memory", proposed["id"])]
    assert found["results"][0]["references"] == [northwind["id"]]
    assert {(c["type"], c["id"]) for c in candidates} == {
        ("entity", dana["id"]),
        ("memory", proposed["id"]),
    }
    assert [(f["id"], f["relation"]) for f in facts["results"]] == [(proposed["id"], "referenced")]
    assert [(f["id"], f["relation"]) for f in every_fact] == [(proposed["id"], "subject")]
    assert proposed["status"] == "active"  # a preference with nothing to check is in use
    assert [(p["memory_id"], p["in_use"]) for p in mine["results"]] == [(proposed["id"], True)]
    assert sorted((k["kind"], k["entities"]) for k in kinds["kinds"]) == [
        ("customer", 1),
        ("supplier", 1),
    ]
    assert (by_ref["decision"], [e["id"] for e in by_ref["candidates"]]) == (
        "matched",
        [northwind["id"]],
    )
    assert agent.match_external_ref("nw-17")["decision"] == "none"  # exact, case kept
    assert proposed.get("status_reason") == "all scenario checks passed"
    assert mine["results"][0]["reasons"] == ["all scenario checks passed"]
    assert proposed.get("needs_clarification") is None


def test_the_async_client_reads_the_same_side(connect, connect_async):
    northwind, dana, proposed = _northwind_story(connect("agent"))

    async def story() -> tuple[Any, ...]:
        async with connect_async("agent") as agent:
            return (
                await agent.search("Northwind", kind="preference"),
                [c["id"] async for c in agent.iter_search("Dana", page_size=1)],
                await agent.list_entity_facts(northwind["id"]),
                [f["id"] async for f in agent.iter_entity_facts(dana["id"])],
                [p["memory_id"] async for p in agent.iter_my_proposals()],
                await agent.entity_kinds(),
                await agent.match_external_ref("NW-17", kind="supplier"),
            )

    found, candidates, facts, about_dana, mine, kinds, by_ref = _run(story())

    assert [c["id"] for c in found["results"]] == [proposed["id"]]
    assert sorted(candidates) == sorted([dana["id"], proposed["id"]])
    assert [f["relation"] for f in facts["results"]] == ["referenced"]
    assert about_dana == mine == [proposed["id"]]
    assert len(kinds["kinds"]) == 2
    assert [e["id"] for e in by_ref["candidates"]] == [northwind["id"]]
