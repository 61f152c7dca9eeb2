"""Natural questions and identifiers, the same on both backends (issue 44, points 3 and 4):
when no candidate has every word the answer ranks by the words that match and says
``"match": "some"``; an entity named in a mixed query is followed to its facts; an
identifier is found whole and by its parts, the exact external reference first."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from memory import fulltext
from memory.search_terms import with_identifiers
from tests.api.support import (
    Written,
    create_entity,
    look_alike_customers,
    preference_body,
    record_source,
)
from tests.conftest import World
from tests.discovery.support import get, propose


def answer(world: World, q: str) -> dict[str, Any]:
    response = get(world, "agent", "/search", q=q)
    assert response.status_code == 200, response.content
    return dict(response.json())


def ids(body: dict[str, Any], kind: str | None = None) -> list[str]:
    return [r["id"] for r in body["results"] if kind is None or r["type"] == kind]


@pytest.fixture
def customers(world: World, django_capture_on_commit_callbacks: Any) -> dict[str, str]:
    """Dana Kim's home address and her active order (whose statement does not repeat her
    name), Sarah who works at Northwind (her fact references it), a look-alike customer."""
    agent = world.client("agent")
    dana = create_entity(agent, "Dana Kim", "customer")
    other = create_entity(agent, "Alice Berg", "customer")
    northwind = create_entity(agent, "Northwind Traders", "company", external_ref="CRM-0077")
    sarah = create_entity(agent, "Sarah Chen", "person")
    order = create_entity(agent, "Order ORD-1001", "order", external_ref="ORD-1001")

    def fact(subject: str, said: str, **body: Any) -> str:
        source = record_source(agent, content=said)
        made = propose(
            world,
            django_capture_on_commit_callbacks,
            "agent",
            preference_body(subject, source, **body),
        )
        return str(made["id"])

    return {
        "dana": dana,
        "northwind": northwind,
        "order_entity": order,
        "address": fact(
            dana,
            "Dana: please deliver to my home at 12 Elm Street.",
            field="delivery_address",
            value="12 Elm Street",
            statement="Dana normally wants deliveries at home.",
        ),
        "order": fact(
            dana,
            "Order ORD-1001 confirmed, shipping to 4 Dock Road.",
            field="active_order",
            value={"order": {"entity": order}, "delivery_address": "4 Dock Road"},
            statement="Active order ships to her office at 4 Dock Road.",
        ),
        "other_address": fact(
            other,
            "Alice: deliveries to 9 Oak Street.",
            field="delivery_address",
            value="9 Oak Street",
            statement="Deliveries go to 9 Oak Street.",
        ),
        "employer": fact(
            sarah,
            "Sarah said she leads procurement at Northwind now.",
            field="employer",
            value={"organisation": {"entity": northwind}, "role": "procurement lead"},
            statement="Sarah is the procurement lead at her employer.",
        ),
    }


def test_a_question_no_candidate_fully_matches_ranks_by_the_words_that_match_and_says_so(
    world: World, customers: dict[str, str]
):
    body = answer(world, "where does Dana Kim get her parcels delivered")

    assert body["match"] == "some"
    assert ids(body, "memory")[0] == customers["address"]
    assert customers["other_address"] not in ids(body)[:2]
    assert ids(body)[0] in (customers["dana"], customers["address"])


def test_who_works_at_northwind_finds_the_fact_that_references_it(
    world: World, customers: dict[str, str]
):
    body = answer(world, "who works at Northwind")

    assert body["match"] == "some"
    assert customers["employer"] in ids(body, "memory")
    employer = next(r for r in body["results"] if r["id"] == customers["employer"])
    assert "referenced_entity" in employer["matched"]


def test_an_entity_named_in_a_mixed_query_is_followed_to_its_facts(
    world: World, customers: dict[str, str]
):
    body = answer(world, "Dana delivery address")

    assert body["match"] == "all"
    facts = ids(body, "memory")
    assert customers["order"] in facts  # its statement never says "Dana"
    assert customers["address"] in facts
    assert customers["other_address"] not in facts  # no word of it names Dana
    order = next(r for r in body["results"] if r["id"] == customers["order"])
    assert {"subject", "value"} <= set(order["matched"])


def test_a_question_naming_one_customer_among_hundreds_finds_that_customers_fact(
    world: World, django_capture_on_commit_callbacks: Any
):
    # A CRM's customers are all "Customer …": the word every name shares must not crowd
    # the one the question names out of the names read, nor send it to other customers.
    look_alike_customers(world.tenant, 300)
    agent = world.client("agent")
    late = create_entity(agent, "Customer 5000")
    source = record_source(agent, content="Customer 5000: deliveries to 7 Quay Lane.")
    fact = propose(
        world,
        django_capture_on_commit_callbacks,
        "agent",
        preference_body(late, source, value="7 Quay Lane", statement="Deliveries go to the quay."),
    )

    body = answer(world, "when does Customer 5000 want things sent over")

    assert body["match"] == "some"
    assert ids(body, "memory") == [fact["id"]]
    assert ids(body)[0] in (late, fact["id"])


def test_a_customer_named_by_its_alias_in_a_question_is_followed_to_its_facts(
    world: World, django_capture_on_commit_callbacks: Any
):
    agent = world.client("agent")
    harbor = create_entity(agent, "Customer 97", aliases=["Harbor Foods"])
    other = create_entity(agent, "Customer 45")

    def window(subject: str, value: str) -> str:
        source = record_source(agent, content=f"Shipping window: {value}.")
        body = preference_body(
            subject, source, field="shipping_window", value=value, statement=f"Ships {value}."
        )
        return str(propose(world, django_capture_on_commit_callbacks, "agent", body)["id"])

    harbors = window(harbor, "weekday mornings")
    window(other, "friday afternoons")

    body = answer(world, "Harbor Foods shipping window")

    assert body["match"] == "all"
    assert ids(body, "memory") == [harbors]
    fact = next(r for r in body["results"] if r["id"] == harbors)
    assert "subject" in fact["matched"]


def test_a_customer_named_whole_is_not_matched_by_its_words_in_another_customers_fact(
    world: World, django_capture_on_commit_callbacks: Any
):
    # Customer 45's statement says "customer" and her address "88": Customer 88's words,
    # scattered, in a fact about someone else.
    agent = world.client("agent")
    asked, other = create_entity(agent, "Customer 88"), create_entity(agent, "Customer 45")

    def address(subject: str, value: str, statement: str) -> str:
        source = record_source(agent, content=statement)
        body = preference_body(subject, source, value=value, statement=statement)
        return str(propose(world, django_capture_on_commit_callbacks, "agent", body)["id"])

    asked_address = address(asked, "3 Mill Lane", "Deliveries go to 3 Mill Lane.")
    address(other, "88 Quarry Road", "The customer wants deliveries at 88 Quarry Road.")

    body = answer(world, "Customer 88 delivery address")

    assert body["match"] == "all"
    assert ids(body, "memory") == [asked_address]
    assert ids(body, "source") == []


def test_when_every_word_matches_the_answer_says_all_and_lists_only_those(
    world: World, customers: dict[str, str]
):
    body = answer(world, "Elm Street")

    assert body["match"] == "all"
    assert customers["address"] in ids(body)
    assert customers["other_address"] not in ids(body)


@pytest.mark.parametrize(
    "q", ["zzqx", "would you get me the zzqx", "tell me something about qqvvx please"]
)
def test_a_question_whose_words_match_nothing_finds_nothing(
    world: World, customers: dict[str, str], q: str
):
    before = Written.now()

    body = answer(world, q)

    assert body == {"results": [], "next": None, "match": "all"}
    assert Written.now() == before


@pytest.fixture
def references(world: World, django_capture_on_commit_callbacks: Any) -> dict[str, str]:
    agent = world.client("agent")
    order = create_entity(agent, "Spring restock", "order", external_ref="ORD-1001")
    hooli = create_entity(agent, "Hooli Retail", "customer", external_ref="CRM-C-1001")
    sales = create_entity(agent, "Export batch", "order", external_ref="SO-77-A/3")
    said = record_source(agent, content="Confirmed by phone.")
    noted = propose(
        world,
        django_capture_on_commit_callbacks,
        "agent",
        preference_body(
            hooli,
            said,
            field="open_orders",
            value="SO-77-A/3",
            statement="Waiting on sales order SO-77-A/3 before invoicing.",
        ),
    )
    return {"order": order, "hooli": hooli, "sales": sales, "noted": noted["id"]}


@pytest.mark.parametrize(
    ("q", "first"),
    [
        ("ORD-1001", "order"),
        ("ord-1001", "order"),
        ("ORD1001", "order"),
        ("1001", "order"),
        ("CRM-C-1001", "hooli"),
        ("SO-77-A/3", "sales"),
        ("SO-77", "sales"),
        ("so77a3", "sales"),
    ],
)
def test_an_identifier_is_found_whole_and_by_its_parts_the_exact_reference_first(
    world: World, references: dict[str, str], q: str, first: str
):
    body = answer(world, q)

    assert ids(body)[0] == references[first]


def test_a_part_of_an_identifier_finds_both_references_and_the_statement_naming_one(
    world: World, references: dict[str, str]
):
    assert {references["order"], references["hooli"]} <= set(ids(answer(world, "1001")))
    assert references["noted"] in ids(answer(world, "77"), "memory")
    assert references["noted"] in ids(answer(world, "SO77A3"), "memory")


@pytest.mark.parametrize(
    "text",
    [
        "Order ORD-1001 to SO-77-A/3, CRM-C-1001 on 2026-12-05",
        "no identifier here, e-mail only",
        "v1.2 and A/3 and x_9",
        "Straße-12/B",
    ],
)
def test_postgresql_indexes_identifiers_as_the_python_of_sqlite_does(world: World, text: str):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's index calls the Python function itself")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {fulltext.IDENTIFIERS}(%s)", [text])
        (indexed,) = cursor.fetchone()

    assert indexed == with_identifiers(text)
