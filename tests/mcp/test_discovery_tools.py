"""The read side over MCP (issue 35), through the SDK's client: every tool declares an
``outputSchema`` the client checks each answer against; search finds the Sarah/Acme fact
through both entities; an agent creates entities, adds aliases, matches another system's
id and follows its own proposals."""

from __future__ import annotations

import json
from typing import Any

from agent_mcp.outputs import FILE, output_schemas
from agent_mcp.tools import TOOLS
from tests.conftest import World
from tests.discovery.support import seed
from tests.mcp.output_schemas import all_schemas
from tests.mcp.support import InProcess, answer, problem


def listed(agent: InProcess) -> dict[str, Any]:
    async def tools(client: Any) -> Any:
        return await client.list_tools()

    return {tool.name: tool for tool in agent._session(tools).tools}


def test_every_tool_declares_the_output_schema_of_the_rest_answer_it_mirrors(world: World):
    tools = listed(InProcess(world.keys["agent"]))

    assert set(tools) == {tool.name for tool in TOOLS}
    missing = set(tools) - set(output_schemas())
    assert not missing, f"no outputSchema: add {missing} to tests/mcp/output_schemas.MIRRORS"
    assert all(tools[name].output_schema == output_schemas()[name] for name in tools)
    assert all(tool.output_schema["type"] == "object" for tool in tools.values())
    assert json.loads(FILE.read_text()) == all_schemas(), (
        "stale: run python -m tests.mcp.output_schemas"
    )


def test_search_finds_the_sarah_acme_fact_through_both_entities(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)
    agent = InProcess(world.keys["agent"])

    by_acme = answer(agent.call("search", {"q": "Acme"}))
    by_sarah = answer(agent.call("search", {"q": "Sarah Chen", "limit": 5}))
    about_acme = answer(agent.call("search", {"q": "procurement", "subject": seeds.acme}))

    assert seeds.employer in [r["id"] for r in by_acme["results"] if r["type"] == "memory"]
    assert seeds.employer in [r["id"] for r in by_sarah["results"] if r["type"] == "memory"]
    assert [r["id"] for r in about_acme["results"]] == [seeds.employer]
    assert by_acme["next_cursor"] is None
    of_acme = answer(agent.call("list_entity_facts", {"entity_id": seeds.acme}))
    of_sarah = answer(agent.call("list_entity_facts", {"entity_id": seeds.sarah, "limit": 1}))
    assert [(f["id"], f["relation"]) for f in of_acme["results"]] == [
        (seeds.employer, "referenced")
    ]
    assert [(f["id"], f["relation"]) for f in of_sarah["results"]] == [(seeds.employer, "subject")]
    assert of_sarah["next_cursor"] is None
    zed = InProcess(world.keys["zed"])
    assert problem(zed.call("list_entity_facts", {"entity_id": seeds.acme}), 404)


def test_the_search_tool_says_whether_the_candidates_have_every_word(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)
    agent = InProcess(world.keys["agent"])

    whole = answer(agent.call("search", {"q": "Sarah procurement"}))
    partial = answer(agent.call("search", {"q": "who leads purchasing for Sarah"}))
    nothing = answer(agent.call("search", {"q": "zzqx"}))

    assert whole["match"] == "all"
    assert seeds.employer in [r["id"] for r in whole["results"]]
    assert partial["match"] == "some"
    assert seeds.employer in [r["id"] for r in partial["results"]][:3]
    assert nothing == {"results": [], "next_cursor": None, "match": "all"}


def test_search_pages_by_cursor_and_refuses_a_bad_query(world: World):
    agent = InProcess(world.keys["agent"])
    for n in range(3):
        answer(agent.call("create_entity", {"kind": "site", "name": f"Harbor Depot {n}"}))

    first = answer(agent.call("search", {"q": "harbor", "limit": 2}))
    rest = answer(agent.call("search", {"q": "harbor", "limit": 2, "cursor": first["next_cursor"]}))

    names = [r["name"] for r in first["results"] + rest["results"]]
    assert sorted(names) == [f"Harbor Depot {n}" for n in range(3)]
    assert rest["next_cursor"] is None
    assert "q" in problem(agent.call("search", {"q": ""}), 422)["errors"]
    assert "qq" in problem(agent.call("search", {"q": "x", "qq": "y"}), 422)["errors"]


def test_an_agent_creates_an_entity_adds_an_alias_and_finds_it_by_its_crm_id(world: World):
    agent = InProcess(world.keys["agent"])

    created = answer(
        agent.call(
            "create_entity",
            {
                "kind": "company",
                "name": "Initech",
                "external_ref": "CRM-77",
                "idempotency_key": "k1",
            },
        )
    )
    again = answer(
        agent.call(
            "create_entity",
            {
                "kind": "company",
                "name": "Initech",
                "external_ref": "CRM-77",
                "idempotency_key": "k1",
            },
        )
    )
    aliased = answer(agent.call("add_alias", {"entity_id": created["id"], "alias": "Initrode"}))
    by_ref = answer(agent.call("match_external_ref", {"external_ref": "CRM-77"}))
    by_alias = answer(agent.call("match_entity", {"name": "Initrode"}))
    kinds = answer(agent.call("list_entity_kinds", {}))

    assert again["id"] == created["id"]
    assert aliased["aliases"] == ["Initrode"]
    assert by_ref["decision"] == "matched" and by_ref["candidates"][0]["id"] == created["id"]
    assert by_alias["candidates"][0]["id"] == created["id"]
    assert kinds == {"kinds": [{"kind": "company", "entities": 1}]}
    assert (
        answer(agent.call("match_external_ref", {"external_ref": "crm-77"}))["decision"] == "none"
    )
    assert problem(agent.call("add_alias", {"entity_id": "ent_nope", "alias": "x"}), 404)
    zed = InProcess(world.keys["zed"])
    assert problem(zed.call("add_alias", {"entity_id": created["id"], "alias": "x"}), 404)


def test_an_agent_lists_its_own_proposals_with_status_and_reasons(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)
    agent = InProcess(world.keys["agent"])
    record = answer(
        agent.call(
            "record_source",
            {"kind": "business_record", "content": "Order A to 4 Dock Road.", "external_ref": "A"},
        )
    )
    with django_capture_on_commit_callbacks(execute=True):
        pending = answer(
            agent.call(
                "propose_memory",
                {
                    "kind": "task_fact",
                    "subject": seeds.dana,
                    "field": "delivery_address",
                    "value": "4 Dock Road",
                    "statement": "Order A goes to 4 Dock Road.",
                    "scope": {"task": "order-a"},
                    "owner": "rita",
                    "expires_at": "2099-01-01T00:00:00Z",
                    "sources": [record["id"]],
                },
            )
        )

    everything = answer(agent.call("list_my_proposals", {"limit": 2}))
    rest = answer(agent.call("list_my_proposals", {"cursor": everything["next_cursor"]}))
    waiting = answer(agent.call("list_my_proposals", {"status": "pending_review"}))
    theirs = answer(InProcess(world.keys["rita"]).call("list_my_proposals", {}))

    mine = everything["results"] + rest["results"]
    assert [p["memory_id"] for p in mine] == [seeds.employer, seeds.address, pending["id"]]
    assert [p["in_use"] for p in mine] == [True, True, False]
    assert [p["memory_id"] for p in waiting["results"]] == [pending["id"]]
    assert any("approval" in reason for reason in waiting["results"][0]["reasons"])
    assert theirs == {"results": [], "next_cursor": None}
    assert "cursor" in problem(agent.call("list_my_proposals", {"cursor": "bad"}), 422)["errors"]
