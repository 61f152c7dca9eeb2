"""The seed stories of discovery (seed 000, seed 002) built through the public API: Sarah
Chen works for Acme as its procurement lead (one fact, about both), Dana's delivery
address, a legal-only note the staff may never see."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.api.support import create_entity, preference_body, record_source
from tests.conftest import World

API = "/api/v1"


@dataclass
class Seeds:
    sarah: str
    acme: str
    dana: str
    employer: str  # mem_… : Sarah works for Acme (value references Acme)
    address: str  # mem_… : Dana's delivery address


def propose(world: World, capture: Any, who: str, body: dict[str, Any]) -> dict[str, Any]:
    with capture(execute=True):
        response = world.client(who).post(f"{API}/memories", body, "json")
    assert response.status_code == 201, response.content
    return dict(response.json())


def get(world: World, who: str, path: str, **params: Any) -> Any:
    return world.client(who).get(f"{API}{path}", params)


def seed(world: World, capture: Any) -> Seeds:
    agent = world.client("agent")
    sarah = create_entity(agent, "Sarah Chen", "person", aliases=["Sal"])
    acme = create_entity(agent, "Acme Industries", "company", external_ref="CRM-0042")
    dana = create_entity(agent, "Dana Kim", "person")
    said = record_source(agent, content="Sarah said she leads procurement at Acme now.")
    employer = propose(
        world,
        capture,
        "agent",
        preference_body(
            sarah,
            said,
            field="employer",
            value={"organisation": {"entity": acme}, "role": "procurement lead"},
            statement="Sarah is the procurement lead at her employer.",
        ),
    )
    home = record_source(agent, content="Deliver to 12 Elm Street, please.")
    address = propose(world, capture, "agent", preference_body(dana, home))
    return Seeds(sarah, acme, dana, employer["id"], address["id"])
