"""Issue 33, point 1: what an agent sends is what Memgov does. A mistyped member
(``contxt``, ``feilds``) or a member of the wrong type (``"context": {"task": 5}``) is a
422 naming it, on every operation that takes a body or a query, and writes nothing; every
documented member keeps working."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import override_settings
from django.urls import resolve
from rest_framework import serializers

from accounts.grants import permission_grant
from agent_interface.serializers import StrictInput
from memory.models import MemoryVersion
from tests.api.support import (
    Written,
    assert_problem,
    create_entity,
    preference_body,
    record_source,
    task_fact_body,
)
from tests.conftest import iso, later
from webhooks import services as webhook_services


@pytest.fixture
def dana(world) -> dict[str, str]:
    """Dana, her order record, a pending task fact about order-a, and a webhook."""
    agent = world.client("agent")
    ids = {
        "entity": create_entity(agent, "Dana Kim"),
        "chat": record_source(agent, "message", "I normally want deliveries at home."),
        "order": record_source(agent, "business_record", "Order order-a: to the office."),
    }
    response = agent.post("/api/v1/memories", task_fact_body(ids["entity"], ids["order"]), "json")
    assert response.status_code == 201, response.content
    ids["memory"] = response.json()["id"]
    for codename in ("manage_webhooks", "erase_subject"):
        permission_grant(user=world.users["rita"], tenant=world.tenant, codename=codename)
    with override_settings(MEMGOV_WEBHOOK_ALLOW_PRIVATE=True):
        endpoint = webhook_services.webhook_create(
            principal=world.principal("rita"),
            url="http://127.0.0.1:9/hooks",
            events=["memory.retired"],
            description="",
        )
    ids["webhook"] = endpoint.pk
    return ids


def _order_a(ids: dict[str, str]) -> dict[str, Any]:
    return {"subject": ids["entity"], "context": {"task": "order-a"}}


# (who, path, body, the member named): one mistyped member per operation that takes a body.
MISTYPED: list[tuple[str, str, Any, str]] = [
    ("agent", "/resolve", lambda i: {"subject": i["entity"], "contxt": {"task": "x"}}, "contxt"),
    ("agent", "/resolve", lambda i: {**_order_a(i), "feilds": ["delivery_address"]}, "feilds"),
    ("agent", "/resolve", lambda i: {**_order_a(i), "task": "order-a"}, "task"),
    ("agent", "/sources", lambda i: {"kind": "message", "content": "hi", "ref": "A"}, "ref"),
    ("agent", "/entities", lambda i: {"kind": "person", "name": "Eve", "alias": ["E"]}, "alias"),
    ("agent", "/entities/match", lambda i: {"name": "Dana Kim", "knd": "person"}, "knd"),
    ("agent", "/entities/{entity}/aliases", lambda i: {"alias": "D", "src": "x"}, "src"),
    (
        "agent",
        "/memories",
        lambda i: task_fact_body(i["entity"], i["order"], valid_form=iso(later(1))),
        "valid_form",
    ),
    ("agent", "/memories/{memory}/versions", lambda i: {"value": "5", "vaule": "5"}, "vaule"),
    ("rita", "/memories/{memory}/approve", lambda i: {"coment": "looks right"}, "coment"),
    ("rita", "/memories/{memory}/reject", lambda i: {"reason": "no", "comment": "x"}, "comment"),
    (
        "rita",
        "/memories/{memory}/retire",
        lambda i: {"reason": "moved", "inflight": "continue"},
        "inflight",
    ),
    ("rita", "/memories/{memory}/recheck", lambda i: {"force": True}, "force"),
    (
        "rita",
        "/memories/{memory}/scenarios",
        lambda i: {"kind": "applicable", "expect": "applies", "contxt": {"task": "order-a"}},
        "contxt",
    ),
    (
        "rita",
        "/memories/{memory}/link-subject",
        lambda i: {"subject": i["entity"], "mention": "D"},
        "mention",
    ),
    ("rita", "/sources/{order}/revoke", lambda i: {"reason": "void", "cascade": False}, "cascade"),
    (
        "rita",
        "/sources/{order}/visibility",
        lambda i: {"visibility": ["staff"], "reason": "x", "labels": ["a"]},
        "labels",
    ),
    ("rita", "/policy", lambda i: {"precedence": {}, "reason": "x", "dry_run": True}, "dry_run"),
    ("rita", "/policy/revalidate", lambda i: {"reason": "model changed", "all": True}, "all"),
    ("rita", "/entities/{entity}/erase", lambda i: {"reason": "asked", "confirm": "y"}, "confirm"),
    (
        "rita",
        "/webhooks",
        lambda i: {"url": "https://example.com/h", "events": ["memory.retired"], "desc": "x"},
        "desc",
    ),
    ("rita", "/webhooks/{webhook}/rotate-secret", lambda i: {"grace": 60}, "grace"),
]


@pytest.mark.parametrize(
    ("who", "path", "body", "member"),
    MISTYPED,
    ids=[f"{path}:{member}" for _, path, _, member in MISTYPED],
)
def test_a_mistyped_member_is_a_422_naming_it_and_writes_nothing(
    world, dana, who: str, path: str, body: Any, member: str
):
    given = Written.now()

    response = world.client(who).post(
        "/api/v1" + path.format(**dana), body(dana), "json", HTTP_IF_MATCH='"1"'
    )

    problem = assert_problem(response, 422, member)
    assert problem["detail"].startswith(f"Invalid content: {member}: ")
    assert Written.now() == given


def test_a_typo_in_resolve_never_answers_without_the_task_scope(world, dana):
    """The issue's reproduction: ``contxt`` used to answer 200 with the preference."""
    response = world.client("agent").post(
        "/api/v1/resolve", {"subject": dana["entity"], "contxt": {"task": "order-a"}}, "json"
    )

    problem = assert_problem(response, 422, "contxt")
    assert "context" in problem["errors"]["contxt"][0]  # the member it probably meant


@pytest.mark.parametrize(
    ("body", "member"),
    [
        ({"context": {"task": 5}}, "context.task"),
        ({"context": {"task": None}}, "context.task"),
        ({"context": ["task", "order-a"]}, "context"),
        ({"fields": "delivery_address"}, "fields"),
        ({"fields": [7]}, "fields.0"),
        ({"explain": "yes"}, "explain"),
        ({"explain": 1}, "explain"),
        ({"task_id": 12}, "task_id"),
        ({"valid_at": 1767225600}, "valid_at"),
    ],
)
def test_a_resolve_member_of_the_wrong_type_is_a_422_naming_it(
    world, dana, body: dict[str, Any], member: str
):
    response = world.client("agent").post(
        "/api/v1/resolve", {"subject": dana["entity"], **body}, "json"
    )

    assert_problem(response, 422, member)


@pytest.mark.parametrize(
    ("overrides", "member"),
    [
        ({"statement": 5}, "statement"),
        ({"owner": ["rita"]}, "owner"),
        ({"sources": "src_x"}, "sources"),
        ({"visibility": [1]}, "visibility.0"),
        (
            {"scenarios": [{"kind": "applicable", "expect": "applies", "context": {"task": 5}}]},
            "scenarios.0.context.task",
        ),
        (
            {"scenarios": [{"kind": "applicable", "expect": "applies", "contxt": {}}]},
            "scenarios.0.contxt",
        ),
    ],
)
def test_a_proposal_member_of_the_wrong_type_or_name_is_a_422_naming_it(
    world, dana, overrides: dict[str, Any], member: str
):
    given = Written.now()
    body = task_fact_body(dana["entity"], dana["order"], **overrides)

    response = world.client("agent").post("/api/v1/memories", body, "json")

    assert_problem(response, 422, member)
    assert Written.now() == given


def test_every_unknown_member_is_named_with_the_other_errors(world, dana):
    response = world.client("agent").post(
        "/api/v1/resolve", {"subjct": dana["entity"], "contxt": {}, "explain": "no"}, "json"
    )

    problem = assert_problem(response, 422)
    assert sorted(problem["errors"]) == ["contxt", "explain", "subjct", "subject"]


def test_members_the_caller_may_not_set_keep_their_own_message(world, dana):
    body = task_fact_body(dana["entity"], dana["order"], verification="verified_record")

    response = world.client("agent").post("/api/v1/memories", body, "json")

    problem = assert_problem(response, 422, "verification")
    assert problem["errors"]["verification"] == ["cannot be set by the caller"]


def test_every_documented_resolve_member_is_taken(world, dana):
    body = {
        "subject": dana["entity"],
        "fields": ["delivery_address"],
        "context": {"task": "order-a", "project": "P-9"},
        "valid_at": iso(later(0)),
        "known_at": iso(later(0)),
        "task_id": "task-17",
        "explain": True,
    }

    response = world.client("agent").post("/api/v1/resolve", body, "json")

    assert response.status_code == 200, response.content
    assert response.json()["retrieval_id"].startswith("rtv_")


def test_every_documented_source_and_proposal_member_is_taken(world, dana):
    agent = world.client("agent")
    source = record_source(
        agent,
        "approval_record",
        "APR-2291 v3",
        external_ref="APR-2291",
        version="3",
        speaker="Rita",
        occurred_at=iso(later(-1)),
        visibility=["staff"],
        metadata={"system": "erp"},
    )
    body = preference_body(
        dana["entity"],
        source,
        value="4 Dock Road",
        statement="Dana wants order-a at the office.",
        scope={"task": "order-a"},
        valid_from=None,
        valid_to=None,
        assertion="state",
        basis={"ref": "APR-2291", "version": "3"},
        visibility=["staff"],
        scenarios=[
            {
                "kind": "applicable",
                "context": {"task": "order-a"},
                "valid_at": None,
                "expect": "applies",
            }
        ],
    )

    response = agent.post("/api/v1/memories", body, "json")

    assert response.status_code == 201, response.content


def test_a_correction_may_restate_the_lineage_and_its_mention(world, dana):
    body = {
        "kind": "task_fact",
        "subject": dana["entity"],
        "field": "delivery_address",
        "value": "5 Dock Road",
        "subject_mention": "",
        "statement": "Order order-a goes to 5 Dock Road.",
    }

    response = world.client("agent").post(
        f"/api/v1/memories/{dana['memory']}/versions", body, "json", HTTP_IF_MATCH='"1"'
    )

    assert response.status_code == 201, response.content
    assert MemoryVersion.objects.filter(item_id=dana["memory"]).count() == 2


@pytest.mark.parametrize(
    ("path", "query", "member"),
    [
        ("/memories", {"sbject": "ent_x"}, "sbject"),
        ("/memories", {"stauts": "active"}, "stauts"),
        ("/memories", {"scope.Project": "P-9"}, "scope.Project"),
        ("/memories", {"limit": "5", "offset": "5"}, "offset"),
        ("/entities", {"name": "Dana"}, "name"),
        ("/audit", {"target_id": "mem_x"}, "target_id"),
        ("/webhooks", {"page": "2"}, "page"),
        ("/webhooks/{webhook}/deliveries", {"status": "failed"}, "status"),
        ("/memories/{memory}", {"version": "1"}, "version"),
    ],
)
def test_an_unknown_query_parameter_is_a_422_naming_it(
    world, dana, path: str, query: dict[str, str], member: str
):
    response = world.client("rita").get("/api/v1" + path.format(**dana), query)

    assert_problem(response, 422, member)


def test_a_query_parameter_given_twice_is_a_422(world, dana):
    response = world.client("rita").get("/api/v1/memories?status=active&status=retired")

    assert_problem(response, 422, "status")


def test_a_query_string_on_resolve_is_refused_even_on_the_hot_path(world, dana):
    response = world.client("agent").post("/api/v1/resolve?explain=true", _order_a(dana), "json")

    assert_problem(response, 422, "explain")


def test_documented_list_filters_are_taken(world, dana):
    rita = world.client("rita")
    query = {
        "subject": dana["entity"],
        "field": "delivery_address",
        "kind": "task_fact",
        "status": "pending_review",
        "owner": "rita",
        "scope.task": "order-a",
        "limit": "5",
    }

    listed = rita.get("/api/v1/memories", query)
    audit = rita.get("/api/v1/audit", {"target": dana["memory"], "since": iso(later(-1))})

    assert listed.status_code == 200, listed.content
    assert [m["id"] for m in listed.json()["results"]] == [dana["memory"]]
    assert audit.status_code == 200, audit.content
    assert rita.get("/api/v1/entities", {"q": "Dana", "limit": "1"}).status_code == 200


def _input_shapes() -> list[type]:
    """Every serializer class the API and the MCP tools define for input (the
    ``api.openapi`` shapes only document answers)."""
    import agent_mcp.tools
    import api.urls  # noqa: F401 - imports every view module

    del agent_mcp.tools
    shapes, todo = [], list(serializers.Serializer.__subclasses__())
    while todo:
        shape = todo.pop()
        todo.extend(shape.__subclasses__())
        module = shape.__module__
        if module.startswith(("api.", "agent_mcp.", "agent_interface.")) and module != (
            "api.openapi"
        ):
            shapes.append(shape)
    return shapes


def test_every_input_shape_is_strict():
    shapes = _input_shapes()

    assert len(shapes) > 20
    assert [s.__qualname__ for s in shapes if not issubclass(s, StrictInput)] == []


def test_the_query_parameters_each_get_takes_are_the_ones_its_schema_documents():
    from tests.openapi_check import published_schema

    for path, operations in published_schema()["paths"].items():
        if "get" not in operations or not path.startswith("/api/v1/"):
            continue
        parameters = operations["get"].get("parameters", ())
        documented = {p["name"] for p in parameters if p["in"] == "query"}
        concrete = re.sub(r"\{[a-z_]+\}", "1", path)
        view = resolve(concrete).func
        assert documented == set(view.cls.query_parameters), path  # type: ignore[attr-defined]


def test_the_published_schema_says_request_bodies_take_no_other_member():
    from tests.openapi_check import published_schema

    schema = published_schema()
    components = schema["components"]["schemas"]
    open_bodies = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is None:
                continue
            name = body["schema"]["$ref"].rsplit("/", 1)[-1]
            if components[name].get("additionalProperties") is not False:
                open_bodies.append(f"{method} {path}")

    assert open_bodies == []
