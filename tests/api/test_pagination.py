"""GET /memories: cursor pagination (limit default 50, max 200; ``next`` until null, every
head exactly once) and the list filters a reviewer uses to find an item."""

from __future__ import annotations

from typing import Any

import pytest

from core.principals import Principal
from memory import entities, proposals, sources
from tests.api.support import assert_problem, create_entity, record_source
from tests.conftest import iso, later


def _propose_many(world, count: int, **overrides: Any) -> list[str]:
    """Preferences straight through the service: the list, not the proposal, is tested."""
    agent = world.principal("agent")
    subject = entities.entity_create(principal=agent, kind="customer", name="Dana Kim").pk
    source = sources.source_record(principal=agent, data={"kind": "message", "content": "hi"}).pk
    ids = []
    for index in range(count):
        data = {
            "kind": "preference", "subject": subject, "field": f"pref_{index}", "value": index,
            "statement": f"Preference {index}.", "scope": {}, "owner": "nora",
            "expires_at": None, "sources": [source], **overrides,
        }  # fmt: skip
        ids.append(proposals.memory_propose(principal=agent, data=data).item_id)
    return ids


def _walk(client, url: str) -> tuple[list[str], list[int]]:
    """Follow ``next`` to the end; return every id seen and each page's size."""
    seen: list[str] = []
    sizes: list[int] = []
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content
        page = response.json()
        assert sorted(page) == ["next", "results"]
        seen += [m["id"] for m in page["results"]]
        sizes.append(len(page["results"]))
        url = page["next"]
    return seen, sizes


def test_pages_follow_next_until_null_with_every_head_exactly_once(world):
    ids = _propose_many(world, 7)

    seen, sizes = _walk(world.client("agent"), "/api/v1/memories?limit=3")

    assert sizes == [3, 3, 1]
    assert seen == sorted(ids)


def test_a_page_that_ends_exactly_at_the_last_row_has_no_next(world):
    _propose_many(world, 4)

    page = world.client("agent").get("/api/v1/memories?limit=4").json()

    assert len(page["results"]) == 4
    assert page["next"] is None


def test_the_default_page_is_50(world):
    ids = _propose_many(world, 51)
    agent = world.client("agent")

    first = agent.get("/api/v1/memories").json()

    assert len(first["results"]) == 50
    assert first["next"].startswith("http://testserver/api/v1/memories?")
    assert [m["id"] for m in agent.get(first["next"]).json()["results"]] == [sorted(ids)[-1]]


def test_a_limit_of_200_is_allowed(world):
    _propose_many(world, 2)

    page = world.client("agent").get("/api/v1/memories?limit=200").json()

    assert len(page["results"]) == 2
    assert page["next"] is None


@pytest.mark.parametrize("limit", ["201", "0", "-1", "abc", "1.5", "", "50 "])
def test_a_limit_outside_1_to_200_is_a_422(world, limit: str):
    response = world.client("agent").get("/api/v1/memories", {"limit": limit})

    assert_problem(response, 422, "limit")


@pytest.mark.parametrize("cursor", ["%%%", "é", "bm90LWFuLWlk!", "bm90LWFuLWlk"])
def test_a_cursor_the_api_did_not_give_is_a_422(world, cursor: str):
    """Never a 500, nor an empty page: cursors are signed (core.cursors), so one that was
    not given out is refused even when it decodes to something that looks like a key."""
    response = world.client("agent").get("/api/v1/memories", {"cursor": cursor})

    assert_problem(response, 422, "cursor")


def test_next_keeps_the_filters(world):
    _propose_many(world, 3)
    _propose_many(world, 2, scope={"task": "web"})

    seen, sizes = _walk(world.client("agent"), "/api/v1/memories?scope.task=web&limit=1")

    assert sizes == [1, 1]
    assert len(set(seen)) == 2


def test_rows_the_caller_may_not_see_are_skipped_without_shrinking_pages(world):
    legal = Principal(tenant=world.tenant, name="agent:legal", labels=frozenset({"legal"}))
    secret = sources.source_record(
        principal=legal, data={"kind": "message", "content": "sealed", "visibility": ["legal"]}
    ).pk
    subject = entities.entity_create(principal=legal, kind="customer", name="Sealed").pk
    hidden = []
    visible = []
    for index in range(3):
        visible += _propose_many(world, 1)
        data = {
            "kind": "preference", "subject": subject, "field": f"sealed_{index}", "value": 1,
            "statement": "Sealed.", "scope": {}, "owner": "nora", "expires_at": None,
            "sources": [secret],
        }  # fmt: skip
        hidden.append(proposals.memory_propose(principal=legal, data=data).item_id)

    seen, sizes = _walk(world.client("agent"), "/api/v1/memories?limit=2")

    assert sizes == [2, 1]
    assert seen == sorted(visible)
    assert not set(hidden) & set(seen)


def test_a_corrected_lineage_is_listed_once_by_its_head(world):
    agent = world.client("agent")
    memory_id = _propose_many(world, 1)[0]
    correction = {"value": 2, "statement": "Preference 0, now 2."}
    response = agent.post(
        f"/api/v1/memories/{memory_id}/versions", correction, "json", HTTP_IF_MATCH='"1"'
    )
    assert response.status_code == 201

    results = agent.get("/api/v1/memories").json()["results"]

    assert [(m["id"], m["version"]) for m in results] == [(memory_id, 2)]


@pytest.fixture
def shelf(world) -> dict[str, str]:
    """Dana's delivery memory (seed 002) and Northwind's exception rules (seed 001)."""
    agent = world.client("agent")
    dana = create_entity(agent, "Dana Kim")
    northwind = create_entity(agent, "Northwind Metals", "supplier")
    chat = record_source(agent, "message", "Deliver at home.")
    order = record_source(agent, "business_record", "Order order-a.")
    approval = record_source(agent, "approval_record", "APR-2291 v3.")

    def propose(**body: Any) -> str:
        response = agent.post("/api/v1/memories", body, "json")
        assert response.status_code == 201, response.content
        return str(response.json()["id"])

    common = {"statement": "s", "expires_at": iso(later(30))}
    ids = {
        "home": propose(
            kind="preference", subject=dana, field="delivery_address", value="12 Elm Street",
            statement="s", scope={}, owner="nora", expires_at=None, sources=[chat],
        ),
        "order_a": propose(
            kind="task_fact", subject=dana, field="delivery_address", value="4 Dock Road",
            scope={"task": "order-a"}, owner="rita", sources=[order], **common,
        ),
        "order_123": propose(
            kind="task_fact", subject=dana, field="delivery_address", value="1 Quay",
            scope={"task": "123"}, owner="rita", sources=[order], **common,
        ),
        "p9": propose(
            kind="enterprise_rule", subject=northwind, field="material_checks",
            value="follow APR-2291", scope={"project": "P-9", "supplier": "S-17"},
            owner="rita", sources=[approval], **common,
        ),
        "p10": propose(
            kind="enterprise_rule", subject=northwind, field="material_checks",
            value="required", scope={"project": "P-10"}, owner="lena", sources=[approval],
            **common,
        ),
    }  # fmt: skip
    rejected = world.client("rita").post(
        f"/api/v1/memories/{ids['order_a']}/reject", {"reason": "wrong order"}, "json"
    )
    assert rejected.status_code == 200
    return {**ids, "dana": dana, "northwind": northwind}


FILTERS: dict[str, list[tuple[dict[str, str], list[str]]]] = {
    "none": [({}, ["home", "order_a", "order_123", "p9", "p10"])],
    "subject": [
        ({"subject": "{dana}"}, ["home", "order_a", "order_123"]),
        ({"subject": "{northwind}"}, ["p9", "p10"]),
        ({"subject": "ent_nobody"}, []),
    ],
    "field_and_kind": [
        ({"field": "material_checks"}, ["p9", "p10"]),
        ({"field": "delivery_address", "kind": "task_fact"}, ["order_a", "order_123"]),
        ({"kind": "preference"}, ["home"]),
        ({"kind": "enterprise_rule"}, ["p9", "p10"]),
    ],
    "status": [
        ({"status": "checking"}, ["home"]),
        ({"status": "rejected"}, ["order_a"]),
        ({"status": "pending_review"}, ["order_123", "p9", "p10"]),
        ({"status": "active"}, []),
    ],
    "owner": [
        ({"owner": "lena"}, ["p10"]),
        ({"owner": "nora"}, ["home"]),
        ({"owner": "nobody"}, []),
    ],
    "scope": [
        ({"scope.project": "P-9"}, ["p9"]),
        ({"scope.project": "P-9", "scope.supplier": "S-17"}, ["p9"]),
        ({"scope.project": "P-9", "scope.supplier": "S-18"}, []),
        ({"scope.task": "order-a"}, ["order_a"]),
        ({"scope.task": "123"}, ["order_123"]),  # a value that parses as JSON stays text
        ({"scope.batch": "B-3"}, []),
        ({"subject": "{dana}", "kind": "task_fact", "scope.task": "123"}, ["order_123"]),
    ],
}


@pytest.mark.parametrize("filters", list(FILTERS))
def test_list_filters_select_the_matching_heads(world, shelf, filters: str):
    agent = world.client("agent")
    for query, expected in FILTERS[filters]:
        params = {k: v.format(**shelf) for k, v in query.items()}

        response = agent.get("/api/v1/memories", params)

        assert response.status_code == 200, response.content
        found = sorted(m["id"] for m in response.json()["results"])
        assert found == sorted(shelf[n] for n in expected), query


@pytest.mark.parametrize(("param", "value"), [("kind", "rumour"), ("status", "maybe")])
def test_an_unknown_kind_or_status_filter_is_a_422(world, param: str, value: str):
    assert_problem(world.client("agent").get("/api/v1/memories", {param: value}), 422, param)


@pytest.mark.parametrize("path", ["/entities/{}/facts", "/proposals", "/search?q=Dana"])
def test_every_list_takes_a_limit_up_to_200_as_the_conventions_say(world, path: str):
    """Issue 44 walk: /entities/{id}/facts?limit=200 was a 422 (max 100) while docs/api.md
    says every list takes up to 200."""
    agent = world.client("agent")
    url = "/api/v1" + path.format(create_entity(agent, "Dana Kim"))
    joiner = "&" if "?" in url else "?"

    assert agent.get(f"{url}{joiner}limit=200").status_code == 200
    assert_problem(agent.get(f"{url}{joiner}limit=201"), 422, "limit")
