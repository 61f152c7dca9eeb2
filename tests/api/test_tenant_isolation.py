"""Tenants never see each other: every endpoint that takes an id answers 404 for another
tenant's object, exactly as for an absent one, and writes nothing (docs/design.md, Visibility).
The same call by the object's own tenant finds it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts import tenancy
from tests.api.support import Written, assert_problem, create_entity, record_source
from tests.conftest import iso, later


@dataclass
class Objects:
    source: str
    entity: str
    memory: str
    held: str


def _objects(client: Any, owner: str) -> Objects:
    """A source, an entity, a pending task fact and a held mention, all of one tenant."""
    entity = create_entity(client, "Dana Kim")
    source = record_source(client, "business_record", "Order order-a: to the office.")
    fact = {
        "kind": "task_fact", "subject": entity, "field": "delivery_address",
        "value": "4 Dock Road", "statement": "Order order-a goes to the office.",
        "scope": {"task": "order-a"}, "owner": owner, "expires_at": iso(later(14)),
        "sources": [source],
    }  # fmt: skip
    memory = client.post("/api/v1/memories", fact, "json")
    assert memory.status_code == 201, memory.content
    held_body = {**fact, "subject": None, "subject_mention": "Dana from the call"}
    held = client.post("/api/v1/memories", held_body, "json")
    assert held.status_code == 201, held.content
    return Objects(source, entity, memory.json()["id"], held.json()["id"])


@pytest.fixture
def acme(world) -> Objects:
    return _objects(world.client("agent"), owner="rita")


@pytest.fixture
def globex(world) -> Objects:
    """Proposed by Globex's own agent, so that Zed reviews as a non-proposer."""
    _, raw = tenancy.api_key_create(tenant=world.other_tenant, agent_name="globex-bot")
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return _objects(agent, owner="zed")


# (method, path, body, headers, what the object's own tenant gets)
ENDPOINTS: list[tuple[str, str, dict[str, Any] | None, dict[str, str], int]] = [
    ("get", "/api/v1/sources/{source}", None, {}, 200),
    ("post", "/api/v1/sources/{source}/revoke", {"reason": "withdrawn"}, {}, 200),
    ("get", "/api/v1/entities/{entity}", None, {}, 200),
    ("post", "/api/v1/entities/{entity}/aliases", {"alias": "D. Kim"}, {}, 201),
    ("get", "/api/v1/memories/{memory}", None, {}, 200),
    ("get", "/api/v1/memories/{memory}/versions", None, {}, 200),
    ("get", "/api/v1/memories/{memory}/versions/1", None, {}, 200),
    (
        "post",
        "/api/v1/memories/{memory}/versions",
        {"value": "5 Dock Road"},
        {"HTTP_IF_MATCH": '"1"'},
        201,
    ),
    ("post", "/api/v1/memories/{memory}/approve", {"comment": "order checked"}, {}, 200),
    ("post", "/api/v1/memories/{memory}/reject", {"reason": "wrong order"}, {}, 200),
    ("post", "/api/v1/memories/{memory}/retire", {"reason": "order cancelled"}, {}, 200),
    ("post", "/api/v1/memories/{memory}/recheck", {}, {}, 409),  # found, but not checks_failed
    (
        "post",
        "/api/v1/memories/{memory}/scenarios",
        {"kind": "applicable", "context": {"task": "order-a"}, "expect": "applies"},
        {},
        201,
    ),
    ("get", "/api/v1/memories/{memory}/checks", None, {}, 200),
    ("post", "/api/v1/memories/{held}/link-subject", {"subject": "{entity}"}, {}, 200),
]
IDS = [f"{method} {path}" for method, path, *_ in ENDPOINTS]


def _call(client: Any, method: str, path: str, body: Any, headers: dict[str, str], on: Objects):
    names = {"source": on.source, "entity": on.entity, "memory": on.memory, "held": on.held}
    url = path.format(**names)
    if body is not None:
        body = {k: v.format(**names) if isinstance(v, str) else v for k, v in body.items()}
    if method == "get":
        return client.get(url, **headers)
    return client.post(url, body, "json", **headers)


@pytest.mark.parametrize(("method", "path", "body", "headers", "own"), ENDPOINTS, ids=IDS)
def test_another_tenants_object_is_a_404_and_its_own_tenant_finds_it(
    world, acme, globex, method, path, body, headers, own
):
    """Zed holds every permission, in Globex: Acme's objects do not exist for Zed, nor
    Globex's for Rita; the very same call by Zed on Globex's object reaches it."""
    given = Written.now()

    zed_on_acme = _call(world.client("zed"), method, path, body, headers, on=acme)
    rita_on_globex = _call(world.client("rita"), method, path, body, headers, on=globex)

    assert_problem(zed_on_acme, 404)
    assert_problem(rita_on_globex, 404)
    assert Written.now() == given
    zed_on_globex = _call(world.client("zed"), method, path, body, headers, on=globex)
    assert zed_on_globex.status_code == own, zed_on_globex.content


def test_a_404_for_another_tenant_reads_like_a_404_for_nothing(world, acme):
    """Same status and same shape: the answer does not reveal that the id exists."""
    zed = world.client("zed")

    foreign = zed.get(f"/api/v1/memories/{acme.memory}").json()
    absent = zed.get("/api/v1/memories/mem_01aaaaaaaaaaaaaaaaaaaaaaaa").json()

    assert foreign["status"] == absent["status"] == 404
    assert foreign["title"] == absent["title"]
    assert sorted(foreign) == sorted(absent)


def test_linking_a_held_mention_to_another_tenants_entity_is_refused(world, acme, globex):
    given = Written.now()

    response = world.client("rita").post(
        f"/api/v1/memories/{acme.held}/link-subject", {"subject": globex.entity}, "json"
    )

    assert_problem(response, 422, "subject")
    assert Written.now() == given


def test_an_alias_cannot_cite_another_tenants_source(world, acme, globex):
    response = world.client("agent").post(
        f"/api/v1/entities/{acme.entity}/aliases",
        {"alias": "D.K.", "source": globex.source},
        "json",
    )

    assert_problem(response, 422, "source")


def test_lists_hold_only_the_callers_tenant(world, acme, globex):
    acme_ids = {m["id"] for m in world.client("rita").get("/api/v1/memories").json()["results"]}
    globex_ids = {m["id"] for m in world.client("zed").get("/api/v1/memories").json()["results"]}

    assert acme_ids == {acme.memory, acme.held}
    assert globex_ids == {globex.memory, globex.held}
