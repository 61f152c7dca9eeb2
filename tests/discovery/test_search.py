"""Discovery over REST (issue 35): candidates for a text, scoped by tenant, labels and
subject before ranking; a fact about two entities found through each."""

from __future__ import annotations

from typing import Any

from accounts import tenancy
from memory.erasure import erasure_continue
from memory.models import MemoryVersion
from tests.api.support import (
    Written,
    assert_problem,
    create_entity,
    preference_body,
    record_source,
)
from tests.approvals.support import person
from tests.conftest import World
from tests.discovery.support import get, propose, seed


def results(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.content
    return list(response.json()["results"])


def test_the_sarah_acme_fact_is_found_through_both_entities(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)

    by_acme = results(get(world, "agent", "/search", q="Acme"))
    by_sarah = results(get(world, "agent", "/search", q="Sarah"))

    fact = next(r for r in by_acme if r["type"] == "memory")
    assert fact["id"] == seeds.employer
    assert fact["subject"] == seeds.sarah
    assert fact["references"] == [seeds.acme]
    assert "referenced_entity" in fact["matched"]
    assert [r["id"] for r in by_acme if r["type"] == "entity"] == [seeds.acme]
    assert seeds.employer in [r["id"] for r in by_sarah if r["type"] == "memory"]
    assert "subject" in next(r for r in by_sarah if r["id"] == seeds.employer)["matched"]


def test_facts_of_an_entity_list_the_shared_fact_once_under_each_entity(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)

    of_sarah = results(get(world, "agent", f"/entities/{seeds.sarah}/facts"))
    of_acme = results(get(world, "agent", f"/entities/{seeds.acme}/facts"))

    assert [(f["id"], f["relation"]) for f in of_sarah] == [(seeds.employer, "subject")]
    assert [(f["id"], f["relation"]) for f in of_acme] == [(seeds.employer, "referenced")]
    assert of_acme[0]["value"]["organisation"] == {"entity": seeds.acme}
    assert results(get(world, "agent", f"/entities/{seeds.dana}/facts"))[0]["id"] == seeds.address


def test_a_value_naming_an_entity_another_tenant_has_is_refused_and_nothing_is_written(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)
    theirs = create_entity(world.client("zed"), "Globex Corp", "company")
    said = record_source(world.client("agent"))
    before = Written.now()

    response = world.client("agent").post(
        "/api/v1/memories",
        preference_body(seeds.dana, said, field="employer", value={"entity": theirs}),
        "json",
    )

    body = assert_problem(response, 422, "value")
    assert theirs in body["errors"]["value"][0]
    assert Written.now() == before


def test_a_correction_keeps_the_reference_and_the_fact_stays_one_record(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)
    memory = get(world, "agent", f"/memories/{seeds.employer}").json()
    said = record_source(world.client("agent"), content="Sarah: I run purchasing at Acme.")
    with django_capture_on_commit_callbacks(execute=True):
        response = world.client("agent").post(
            f"/api/v1/memories/{seeds.employer}/versions",
            {
                "value": {"organisation": {"entity": seeds.acme}, "role": "head of purchasing"},
                "statement": "Sarah is head of purchasing at her employer.",
                "sources": [said],
            },
            "json",
            HTTP_IF_MATCH=f'"{memory["version"]}"',
        )
    assert response.status_code == 201, response.content

    of_acme = results(get(world, "agent", f"/entities/{seeds.acme}/facts"))

    assert [f["id"] for f in of_acme] == [seeds.employer]
    assert of_acme[0]["version"] == 2


def test_a_restricted_fact_never_appears_not_even_as_a_count(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)
    counsel = world.keys["counsel"] = tenancy.api_key_create(
        tenant=world.tenant, agent_name="counsel", labels=["legal"]
    )[1]
    assert counsel
    legal = record_source(
        world.client("counsel"),
        content="Legal hold: Quillon merger talks involve Acme.",
        visibility=["legal"],
    )
    propose(
        world,
        django_capture_on_commit_callbacks,
        "counsel",
        preference_body(
            seeds.acme,
            legal,
            field="legal_hold",
            value="Quillon merger",
            statement="Acme is under a Quillon legal hold.",
            owner="rita",
        ),
    )

    found = get(world, "agent", "/search", q="Quillon")
    about_acme = get(world, "agent", "/search", q="Acme", subject=seeds.acme)
    facts = get(world, "agent", f"/entities/{seeds.acme}/facts")

    assert found.json() == {"results": [], "next": None, "match": "all"}
    assert "legal_hold" not in [r.get("field") for r in results(about_acme)]
    assert "Quillon" not in facts.content.decode()
    assert "Quillon" not in about_acme.content.decode()
    assert "legal_hold" in [
        r.get("field") for r in results(get(world, "counsel", "/search", q="Quillon"))
    ]


def test_search_stays_in_the_callers_tenant(world: World, django_capture_on_commit_callbacks: Any):
    seeds = seed(world, django_capture_on_commit_callbacks)
    zed = world.client("zed")
    create_entity(zed, "Acme Rival", "company")

    theirs = results(zed.get("/api/v1/search", {"q": "Acme"}))
    ours = results(get(world, "agent", "/search", q="Acme"))

    assert [r["statement"] for r in theirs] == ["Acme Rival (company)"]
    assert "Acme Rival (company)" not in [r["statement"] for r in ours]
    assert_problem(zed.get("/api/v1/search", {"q": "Sarah", "subject": seeds.sarah}), 404)
    assert_problem(zed.get(f"/api/v1/entities/{seeds.acme}/facts"), 404)


def test_bad_queries_are_422_naming_the_parameter(world: World):
    agent = world.client("agent")

    assert_problem(agent.get("/api/v1/search", {"q": ""}), 422, "q")
    assert_problem(agent.get("/api/v1/search", {"q": "   "}), 422, "q")
    assert_problem(agent.get("/api/v1/search"), 422, "q")
    assert_problem(agent.get("/api/v1/search", {"q": "?!"}), 422, "q")
    assert_problem(agent.get("/api/v1/search", {"q": "x" * 201}), 422, "q")
    assert_problem(agent.get("/api/v1/search", {"q": "Acme", "sbject": "x"}), 422, "sbject")
    assert_problem(agent.get("/api/v1/search", {"q": "Acme", "status": "on"}), 422, "status")
    assert_problem(agent.get("/api/v1/search", {"q": "Acme", "kind": "fact"}), 422, "kind")
    assert_problem(agent.get("/api/v1/search", {"q": "Acme", "limit": "0"}), 422, "limit")
    assert_problem(agent.get("/api/v1/search", {"q": "Acme", "limit": "x"}), 422, "limit")
    assert_problem(agent.get("/api/v1/search", {"q": "Acme", "cursor": "nope"}), 422, "cursor")
    assert_problem(agent.get("/api/v1/search?q=Acme&q=Sarah"), 422, "q")


def test_cursor_pages_give_every_candidate_once_best_first(
    world: World, django_capture_on_commit_callbacks: Any
):
    agent = world.client("agent")
    for n in range(7):
        create_entity(agent, f"Harbor Depot {n}", "site")

    seen: list[dict[str, Any]] = []
    response = get(world, "agent", "/search", q="Harbor", limit=3)
    pages = 0
    while True:
        seen += results(response)
        pages += 1
        following = response.json()["next"]
        if following is None:
            break
        response = agent.get(following)

    assert pages == 3
    assert sorted(r["statement"] for r in seen) == [f"Harbor Depot {n} (site)" for n in range(7)]
    assert len({r["id"] for r in seen}) == 7
    scores = [r["score"] for r in seen]
    assert scores == sorted(scores, reverse=True)


def test_words_statements_values_and_sources_each_say_why_they_matched(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)

    by_value = results(get(world, "agent", "/search", q="Elm Street"))
    by_alias = results(get(world, "agent", "/search", q="Sal"))
    by_ref = results(get(world, "agent", "/search", q="CRM-0042"))

    address = next(r for r in by_value if r["type"] == "memory")
    assert (address["id"], address["status"]) == (seeds.address, "active")
    assert "value" in address["matched"]
    source = next(r for r in by_value if r["type"] == "source")
    assert source["matched"] == ["content"] and source["statement"].startswith("Deliver to 12")
    assert by_alias[0]["id"] == seeds.sarah and "alias" in by_alias[0]["matched"]
    assert by_ref[0]["id"] == seeds.acme and "external_ref" in by_ref[0]["matched"]


def test_filters_narrow_to_facts_about_a_subject_of_a_kind_and_status(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)

    about_acme = results(get(world, "agent", "/search", q="procurement", subject=seeds.acme))
    about_dana = results(get(world, "agent", "/search", q="procurement", subject=seeds.dana))
    rules = results(get(world, "agent", "/search", q="Sarah", kind="enterprise_rule"))
    retired = results(get(world, "agent", "/search", q="Sarah", status="retired"))

    assert [r["id"] for r in about_acme] == [seeds.employer]
    assert about_dana == [] and rules == [] and retired == []


def test_erasing_a_person_takes_the_facts_that_reference_her_and_no_others(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)
    said = record_source(world.client("agent"), content="Acme's buyer is Sarah.")
    contact = propose(
        world,
        django_capture_on_commit_callbacks,
        "agent",
        preference_body(
            seeds.acme,
            said,
            field="procurement_contact",
            value={"entity": seeds.sarah},
            statement="Acme's procurement contact is Sarah Chen.",
        ),
    )
    person(world, "erin", "erase_subject")
    with django_capture_on_commit_callbacks(execute=True):
        started = world.client("erin").post(
            f"/api/v1/entities/{seeds.sarah}/erase", {"reason": "Art. 17"}, "json"
        )
    assert started.status_code == 202, started.content
    erasure_continue(started.json()["erasure"])

    erased = MemoryVersion.objects.get(item_id=contact["id"])
    address = MemoryVersion.objects.get(item_id=seeds.address)
    assert (erased.status, erased.value, erased.statement) == ("retired", None, "")
    assert erased.erased_at is not None
    assert (address.status, address.value) == ("active", "12 Elm Street")
    assert results(get(world, "agent", "/search", q="procurement contact")) == []
    assert results(get(world, "agent", "/search", q="Elm"))[0]["id"] == seeds.address


def test_a_value_chosen_by_clarification_is_checked_and_indexed_as_a_reference(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)
    agent = world.client("agent")
    said = record_source(agent, "business_record", "Order order-b: bill whoever she works for.")
    body = preference_body(
        seeds.dana,
        said,
        field="bill_to",
        value_mention="whoever she works for",
        value_options=[
            {"label": "Acme", "value": {"entity": seeds.acme}},
            {"label": "nobody", "value": {"entity": "ent_" + "0" * 26}},
        ],
        statement="Bill order-b to Dana's employer.",
    )
    del body["value"]
    held = agent.post("/api/v1/memories", body, "json").json()

    refused = agent.post(f"/api/v1/memories/{held['id']}/clarify", {"choice": "opt_2"}, "json")
    with django_capture_on_commit_callbacks(execute=True):
        chosen = agent.post(f"/api/v1/memories/{held['id']}/clarify", {"choice": "opt_1"}, "json")

    assert_problem(refused, 422, "value")
    assert chosen.status_code == 200, chosen.content
    of_acme = results(get(world, "agent", f"/entities/{seeds.acme}/facts"))
    assert held["id"] in [f["id"] for f in of_acme]
