"""One query language, accents folded, near spellings and whole pages, the same on both
backends (issue 44, points 1, 2, 5 and 6)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_interface.discovery import SEARCH_CURSOR
from core.cursors import CursorCodec
from tests.api.support import Written, assert_problem, create_entity, preference_body, record_source
from tests.conftest import World
from tests.discovery.support import get, propose, seed


def results(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.content
    return list(response.json()["results"])


def found(world: World, q: str, **params: Any) -> list[tuple[str, str]]:
    return [(r["type"], r["id"]) for r in results(get(world, "agent", "/search", q=q, **params))]


def test_a_detached_dash_finds_what_the_word_finds(
    world: World, django_capture_on_commit_callbacks: Any
):
    seed(world, django_capture_on_commit_callbacks)

    dana = found(world, "Dana")

    assert dana
    assert found(world, "- Dana") == dana
    assert found(world, "Dana -") == dana
    assert found(world, "the Dana") == dana


def test_an_excluded_word_in_an_alias_excludes_the_entity_on_both_backends(world: World):
    """Issue 44 walk: on PostgreSQL "Dana -Kim" listed Dana Kim (her alias "D. Kim" has the
    word; a near spelling of her name let her through); SQLite let through an entity whose
    alias lacks the word though its name has it."""
    agent = world.client("agent")
    dana_kim = create_entity(agent, "Dana Kim", aliases=["D. Kim"])
    kim_lee = create_entity(agent, "Kim Lee", aliases=["Dana"])
    dana_stone = create_entity(agent, "Dana Stone", aliases=["Danny"])

    listed = found(world, "Dana -Kim")

    assert ("entity", dana_stone) in listed
    assert ("entity", dana_kim) not in listed
    assert ("entity", kim_lee) not in listed


def test_an_entity_found_by_its_name_says_name_only_on_both_backends(world: World):
    """Issue 44 walk: on PostgreSQL "- Dana" said Dana Kim matched on ["external_ref",
    "name"], though she has no external ref."""
    agent = world.client("agent")
    dana = create_entity(agent, "Dana Kim")
    order = create_entity(agent, "Dana's order", kind="order", external_ref="DANA-77")

    for q in ("- Dana", "Dana", "Kim Dana"):
        matched = {r["id"]: r["matched"] for r in results(get(world, "agent", "/search", q=q))}
        assert matched[dana] == ["name"], q
    assert matched_of(world, "DANA-77", order) == ["external_ref"]
    assert matched_of(world, "Dana", order) == ["external_ref", "name"]


def matched_of(world: World, q: str, entity: str) -> list[str]:
    listed = results(get(world, "agent", "/search", q=q))
    return next(list(r["matched"]) for r in listed if r["id"] == entity)


def test_a_query_with_nothing_to_find_is_a_422_naming_q_on_both_backends(
    world: World, django_capture_on_commit_callbacks: Any
):
    seed(world, django_capture_on_commit_callbacks)
    before = Written.now()

    for q in ("-Dana", "is -zzz", "the -Dana", "who is", '"the" -"Elm Street"'):
        assert_problem(get(world, "agent", "/search", q=q), 422, "q")
    assert Written.now() == before


def test_an_excluded_word_excludes_on_both_backends(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)

    assert ("memory", seeds.address) in found(world, "Dana Elm")
    assert ("memory", seeds.address) not in found(world, "Dana Elm -street")


@pytest.fixture
def accented(world: World, django_capture_on_commit_callbacks: Any) -> dict[str, str]:
    agent = world.client("agent")
    jurgen = create_entity(agent, "Jürgen Müller", "person")
    zoe = create_entity(agent, "Zoë Saldaña", "person")
    said = record_source(agent, content="Jürgen: send it to Hauptstraße 5, Köln.")
    address = propose(
        world,
        django_capture_on_commit_callbacks,
        "agent",
        preference_body(
            jurgen,
            said,
            value="Hauptstraße 5, Köln",
            statement="Jürgen wants deliveries at Hauptstraße 5.",
        ),
    )
    return {"jurgen": jurgen, "zoe": zoe, "address": address["id"]}


@pytest.mark.parametrize(
    ("q", "wanted"),
    [
        ("Jurgen", ("entity", "jurgen")),
        ("jürgen", ("entity", "jurgen")),
        ("JURGEN MULLER", ("entity", "jurgen")),
        ("Zoe", ("entity", "zoe")),
        ("Saldana", ("entity", "zoe")),
        ("Hauptstrasse", ("memory", "address")),
        ("HAUPTSTRASSE 5", ("memory", "address")),
        ("Koln", ("memory", "address")),
    ],
)
def test_a_name_or_a_word_typed_without_its_accents_is_found_on_both_backends(
    world: World, accented: dict[str, str], q: str, wanted: tuple[str, str]
):
    kind, name = wanted

    assert (kind, accented[name]) in found(world, q)


def test_a_subject_named_without_its_accents_is_jurgen_not_a_stranger(
    world: World, accented: dict[str, str]
):
    agent = world.client("agent")

    def subjects(*given: str) -> Any:
        response = agent.post("/api/v1/context", {"subjects": list(given)}, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    exact = subjects("Jurgen Muller")
    first_name = subjects("Jurgen")

    assert [(s["id"], s["decision"]) for s in exact["subjects"]] == [
        (accented["jurgen"], "matched")
    ]
    assert first_name["subjects"][0]["decision"] == "ambiguous"
    assert "No entity has that name" not in first_name["text"]
    assert "Jürgen Müller" in first_name["text"]


@pytest.mark.parametrize("q", ["nortwind", "norhtwind", "Nortwind traders", "Northwnid"])
def test_a_near_spelling_at_the_documented_threshold_or_a_transposition_finds_the_name(
    world: World, q: str
):
    if connection.vendor != "postgresql":
        pytest.skip("near spellings are read by pg_trgm")
    northwind = create_entity(world.client("agent"), "Northwind Traders", "company")
    create_entity(world.client("agent"), "Southern Winds", "company")

    assert found(world, q)[:1] == [("entity", northwind)]


def test_an_unrelated_word_finds_no_near_spelling(world: World):
    create_entity(world.client("agent"), "Northwind Traders", "company")

    assert found(world, "nowhere") == []
    assert found(world, "southward") == []


def test_paging_returns_exactly_the_one_big_page_for_every_page_size(
    world: World, django_capture_on_commit_callbacks: Any
):
    seeds = seed(world, django_capture_on_commit_callbacks)
    agent = world.client("agent")
    for n in range(3):
        create_entity(agent, f"Dana Depot {n}", "site")
    memory = get(world, "agent", f"/memories/{seeds.address}").json()
    corrected = agent.post(
        f"/api/v1/memories/{seeds.address}/versions",
        {"value": "14 Elm Street", "statement": "Dana now wants deliveries at number 14."},
        "json",
        HTTP_IF_MATCH=f'"{memory["version"]}"',
    )
    assert corrected.status_code == 201, corrected.content
    everything = results(get(world, "agent", "/search", q="Dana", limit=100))
    versions = [(r["id"], r.get("version")) for r in everything if r["id"] == seeds.address]
    assert len(versions) == 2, everything  # the active v1 and its pending v2, both listed

    @settings(max_examples=len(everything), deadline=None, database=None)
    @given(st.integers(min_value=1, max_value=len(everything)))
    def pages_make_the_whole(limit: int) -> None:
        seen: list[dict[str, Any]] = []
        response = get(world, "agent", "/search", q="Dana", limit=limit)
        while True:
            seen += results(response)
            following = response.json()["next"]
            if following is None:
                break
            response = agent.get(following)
        assert seen == everything, limit

    pages_make_the_whole()


def test_a_cursor_given_out_before_the_key_had_a_version_still_pages_on(world: World):
    for n in range(4):
        create_entity(world.client("agent"), f"Harbor Depot {n}", "site")
    page = get(world, "agent", "/search", q="Harbor", limit=2)
    cursor = parse_qs(urlsplit(page.json()["next"]).query)["cursor"][0]
    score, kind, ident, _version = SEARCH_CURSOR.decode(cursor)
    unversioned = CursorCodec("search", (int, str, str)).encode([score, kind, ident])

    rest = results(get(world, "agent", "/search", q="Harbor", limit=10, cursor=unversioned))

    assert [r["id"] for r in results(page) + rest] == [
        r["id"] for r in results(get(world, "agent", "/search", q="Harbor", limit=10))
    ]
