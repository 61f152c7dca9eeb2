"""The REST side of the agent tools (issue 35): an agent's own proposals with why each is
where it is, the entity kinds in use, and an entity by another system's id."""

from __future__ import annotations

from typing import Any

from tests.api.support import assert_problem, create_entity, preference_body, record_source
from tests.conftest import World
from tests.discovery.support import get, propose, seed


def test_an_agent_reads_its_own_proposals_page_by_page_and_no_one_elses(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)

    first = get(world, "agent", "/proposals", limit=1)
    second = world.client("agent").get(first.json()["next"])
    active = get(world, "agent", "/proposals", status="active")
    nora = get(world, "nora", "/proposals")

    assert [p["memory_id"] for p in first.json()["results"]] == [seeds.employer]
    assert [p["memory_id"] for p in second.json()["results"]] == [seeds.address]
    assert second.json()["next"] is None
    assert [p["in_use"] for p in active.json()["results"]] == [True, True]
    assert nora.json() == {"results": [], "next": None}
    assert_problem(get(world, "agent", "/proposals", status="done"), 422, "status")
    assert_problem(get(world, "agent", "/proposals", mine="yes"), 422, "mine")


def test_kinds_in_use_and_matching_by_external_ref_stay_in_the_tenant(world: World):
    agent = world.client("agent")
    create_entity(agent, "Initech", "company", external_ref="CRM-77")
    create_entity(agent, "Initech Labs", "company", external_ref="CRM-77")
    create_entity(agent, "Peter", "person", external_ref="HR-1")
    create_entity(world.client("zed"), "Globex", "company", external_ref="HR-1")

    kinds = get(world, "agent", "/entities/kinds").json()
    twice = get(world, "agent", "/entities/by-ref", external_ref="CRM-77").json()
    once = get(world, "agent", "/entities/by-ref", external_ref="HR-1").json()
    people = get(world, "agent", "/entities/by-ref", external_ref="CRM-77", kind="person").json()

    assert kinds == {
        "kinds": [{"kind": "company", "entities": 2}, {"kind": "person", "entities": 1}]
    }
    assert twice["decision"] == "ambiguous" and len(twice["candidates"]) == 2
    assert once["decision"] == "matched" and once["candidates"][0]["name"] == "Peter"
    assert people == {"decision": "none", "candidates": []}
    assert_problem(get(world, "agent", "/entities/by-ref"), 422, "external_ref")


def test_facts_of_an_entity_page_by_cursor_each_fact_once(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)
    said = record_source(world.client("agent"), content="Dana buys for Acme; Acme pays in 30 days.")
    for subject, field, value in [
        (seeds.dana, "employer", {"entity": seeds.acme}),
        (seeds.acme, "payment_terms", "30 days"),
    ]:
        propose(
            world,
            django_capture_on_commit_callbacks,
            "agent",
            preference_body(subject, said, field=field, value=value, statement=f"{field}."),
        )

    first = get(world, "agent", f"/entities/{seeds.acme}/facts", limit=2)
    second = world.client("agent").get(first.json()["next"])

    facts = first.json()["results"] + second.json()["results"]
    assert len(first.json()["results"]) == 2 and second.json()["next"] is None
    assert sorted(f["relation"] for f in facts) == ["referenced", "referenced", "subject"]
    assert len({f["id"] for f in facts}) == 3
    assert_problem(get(world, "agent", f"/entities/{seeds.acme}/facts", cursor="x"), 422)
