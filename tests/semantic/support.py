"""A small shop for the semantic stories: Dana Kim's deliveries go to her office (a
statement that never says "parcel"), Marcus has a nut allergy, Sarah Chen works at
Northwind, and an order with an external ref. Built through the public API with the
on-commit callbacks run, so the worker's tasks (checks, vectors) run as they would."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.api.support import preference_body, record_source
from tests.conftest import World
from tests.discovery.support import get

API = "/api/v1"


@dataclass(frozen=True)
class Shop:
    dana: str
    sarah: str
    order_entity: str
    office: str  # mem_…: Dana's deliveries go to her office
    allergy: str  # mem_…: Marcus's nut allergy


def entity(world: World, capture: Any, name: str, kind: str = "customer", **extra: Any) -> str:
    who = extra.pop("who", "agent")
    with capture(execute=True):
        response = world.client(who).post(
            f"{API}/entities", {"kind": kind, "name": name, **extra}, "json"
        )
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def fact(world: World, capture: Any, body: dict[str, Any], *, who: str = "agent") -> str:
    with capture(execute=True):
        response = world.client(who).post(f"{API}/memories", body, "json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def build_shop(world: World, capture: Any) -> Shop:
    agent = world.client("agent")
    dana = entity(world, capture, "Dana Kim")
    marcus = entity(world, capture, "Marcus O'Brien")
    sarah = entity(world, capture, "Sarah Chen", "person")
    northwind = entity(world, capture, "Northwind Traders", "company")
    order = entity(world, capture, "Order ORD-1001", "order", external_ref="ORD-1001")
    office = fact(
        world,
        capture,
        preference_body(
            dana,
            record_source(agent, content="Dana: send everything to my office from now on."),
            field="delivery_address",
            value="4 Dock Road",
            statement="Deliveries to her office from now on.",
        ),
    )
    allergy = fact(
        world,
        capture,
        preference_body(
            marcus,
            record_source(agent, content="Marcus mentioned he cannot eat peanuts."),
            field="dietary_requirement",
            value="no peanuts or tree nuts",
            statement="Severe peanut allergy: nothing with nuts at client dinners.",
        ),
    )
    fact(
        world,
        capture,
        preference_body(
            sarah,
            record_source(agent, content="Sarah said she leads procurement at Northwind."),
            field="employer",
            value={"organisation": {"entity": northwind}, "role": "procurement lead"},
            statement="Sarah leads procurement at her employer.",
        ),
    )
    return Shop(dana=dana, sarah=sarah, order_entity=order, office=office, allergy=allergy)


def search(world: World, q: str, *, who: str = "agent") -> dict[str, Any]:
    response = get(world, who, "/search", q=q)
    assert response.status_code == 200, response.content
    return dict(response.json())


def found_ids(body: dict[str, Any]) -> list[str]:
    return [r["id"] for r in body["results"]]
