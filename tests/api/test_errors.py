"""Errors are ``application/problem+json`` with type, title, status and detail, with the
status docs/api.md names, never a 500 for bad input, and a refused request writes nothing."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.api.support import Written, assert_problem, create_entity, preference_body, record_source


@pytest.fixture
def source_id(world) -> str:
    return record_source(world.client("agent"), "message", "Hello.")


@pytest.mark.parametrize(
    "raw", ['{"kind": "message",', "{'kind': 'message'}", "NaN", '{"a": 1} trailing', "[1,]"]
)
def test_malformed_json_is_a_400_and_writes_nothing(world, raw: str):
    agent = world.client("agent")
    for path in ("/api/v1/sources", "/api/v1/memories", "/api/v1/resolve"):
        given = Written.now()

        response = agent.post(path, raw, content_type="application/json")

        assert_problem(response, 400)
        assert Written.now() == given, path


def test_an_empty_body_is_an_empty_object_so_a_422_naming_what_is_missing(world):
    response = world.client("agent").post("/api/v1/sources", "", content_type="application/json")

    assert sorted(assert_problem(response, 422)["errors"]) == ["content", "kind"]


def test_json_that_is_not_utf8_is_a_400(world):
    response = world.client("agent").post(
        "/api/v1/sources",
        b'{"kind": "message", "content": "\xff\xfe"}',
        content_type="application/json",
    )

    assert_problem(response, 400)


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/xml",
    ],
)
def test_a_body_that_is_not_json_is_a_415_and_writes_nothing(world, content_type: str):
    given = Written.now()

    response = world.client("agent").post(
        "/api/v1/sources", "kind=message&content=hello", content_type=content_type
    )

    assert_problem(response, 415)
    assert Written.now() == given


def test_a_body_over_256_kib_is_a_413_and_writes_nothing(world):
    body = '{"kind": "message", "content": "' + "x" * (256 * 1024) + '"}'
    given = Written.now()

    response = world.client("agent").post("/api/v1/sources", body, content_type="application/json")

    assert_problem(response, 413)
    assert Written.now() == given


def test_a_body_just_under_256_kib_reaches_validation(world):
    """Not a 413: the content is then too long for a source (32 KiB), a 422 naming it."""
    body = '{"kind": "message", "content": "' + "x" * (255 * 1024) + '"}'

    response = world.client("agent").post("/api/v1/sources", body, content_type="application/json")

    assert_problem(response, 422, "content")


def test_a_content_length_that_is_not_a_number_is_a_400(world):
    response = world.client("agent").post(
        "/api/v1/sources", "{}", content_type="application/json", CONTENT_LENGTH="lots"
    )

    assert_problem(response, 400)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/no-such-thing",
        "/api/v1/memories/mem_x/no-such-action",
        "/api/v1/sources/src_x/revoke/again",
        "/api/v2/sources",
    ],
)
def test_an_unknown_route_is_a_404_problem(world, path: str):
    assert_problem(world.client("agent").get(path), 404)


def test_an_unknown_route_is_a_404_problem_without_a_key_too(db):
    assert_problem(APIClient().post("/api/v1/nothing-here", {}, "json"), 404)


@pytest.mark.parametrize(
    ("path", "absent"),
    [
        ("/api/v1/sources/{id}", "src_01aaaaaaaaaaaaaaaaaaaaaaaa"),
        ("/api/v1/entities/{id}", "ent_01aaaaaaaaaaaaaaaaaaaaaaaa"),
        ("/api/v1/memories/{id}", "mem_01aaaaaaaaaaaaaaaaaaaaaaaa"),
        ("/api/v1/memories/{id}/versions", "mem_01aaaaaaaaaaaaaaaaaaaaaaaa"),
    ],
)
def test_an_absent_id_is_a_404_problem(world, path: str, absent: str):
    assert_problem(world.client("agent").get(path.format(id=absent)), 404)


def test_a_version_number_beyond_the_head_is_a_404(world):
    agent = world.client("agent")
    dana = create_entity(agent)
    chat = record_source(agent)
    body = preference_body(dana, chat, field="tone", value="brief", statement="Keep it brief.")
    memory = agent.post("/api/v1/memories", body, "json").json()

    assert agent.get(f"/api/v1/memories/{memory['id']}/versions/1").status_code == 200
    assert_problem(agent.get(f"/api/v1/memories/{memory['id']}/versions/2"), 404)


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_sources_are_immutable_so_changing_one_is_a_405(world, source_id: str, method: str):
    given = Written.now()

    response = getattr(world.client("rita"), method)(
        f"/api/v1/sources/{source_id}", {"content": "rewritten"}, "json"
    )

    assert_problem(response, 405)
    assert response["Allow"] == "GET, HEAD, OPTIONS"
    assert Written.now() == given
    assert world.client("agent").get(f"/api/v1/sources/{source_id}").json()["content"] == "Hello."


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("delete", "/api/v1/memories/mem_x"),
        ("put", "/api/v1/memories/mem_x"),
        ("get", "/api/v1/memories/mem_x/approve"),
        ("get", "/api/v1/resolve"),
        ("delete", "/api/v1/audit"),
        ("post", "/api/v1/audit/verify"),
    ],
)
def test_a_method_a_route_does_not_take_is_a_405(world, method: str, path: str):
    assert_problem(getattr(world.client("rita"), method)(path), 405)


def test_a_source_can_be_read_back_as_recorded(world, source_id: str):
    response = world.client("agent").get(f"/api/v1/sources/{source_id}")

    assert response.status_code == 200
    assert response.json()["content"] == "Hello."


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Token mg_abc_def",
        "Basic cml0YTpyaXRhLXBhc3M=",
        "Bearer not-a-key",
        "Bearer mg_000000000000_wrongsecret",
    ],
)
def test_without_a_valid_key_every_endpoint_is_a_401(world, authorization: str | None):
    client = APIClient()
    if authorization is not None:
        client.credentials(HTTP_AUTHORIZATION=authorization)
    calls = [("get", "/api/v1/memories"), ("post", "/api/v1/sources"), ("get", "/api/v1/audit")]
    for method, path in calls:
        given = Written.now()

        response = getattr(client, method)(path, {"kind": "message", "content": "x"}, "json")

        assert_problem(response, 401)
        assert response["WWW-Authenticate"] == "Bearer"
        assert Written.now() == given, path


def test_a_real_key_with_a_wrong_secret_is_a_401(world):
    prefix = world.keys["agent"].split("_")[1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer mg_{prefix}_{'A' * 43}")

    assert_problem(client.get("/api/v1/memories"), 401)


def test_the_key_of_another_persona_is_not_a_prefix_match(world):
    """The lookup prefix alone never authenticates: the whole key is compared."""
    agent_prefix = world.keys["agent"].split("_")[1]
    rita_secret = world.keys["rita"].split("_", 2)[2]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer mg_{agent_prefix}_{rita_secret}")

    assert_problem(client.get("/api/v1/memories"), 401)


def test_an_agent_may_not_approve_which_is_a_403_problem(world):
    agent = world.client("agent")
    dana = create_entity(agent)
    order = record_source(agent, "business_record", "Order order-a.")
    body = {
        "kind": "task_fact", "subject": dana, "field": "delivery_address", "value": "4 Dock Road",
        "statement": "Order order-a goes to the office.", "scope": {"task": "order-a"},
        "owner": "rita", "expires_at": "2099-01-01T00:00:00Z", "sources": [order],
    }  # fmt: skip
    memory = agent.post("/api/v1/memories", body, "json").json()
    given = Written.now()

    response = agent.post(f"/api/v1/memories/{memory['id']}/approve", {}, "json")

    assert_problem(response, 403)
    assert Written.now() == given


@pytest.mark.parametrize("path", ["/api/v1/sources/src_%00", "/api/v1/memories/%00/versions"])
def test_a_nul_character_in_the_path_is_a_400_not_a_database_error(world, path: str):
    assert_problem(world.client("rita").get(path), 400)


@pytest.mark.parametrize(
    ("path", "member"),
    [
        ("/api/v1/memories?owner=%00", "owner"),
        ("/api/v1/memories?scope.task=a%00b", "scope.task"),
        ("/api/v1/audit?target=%00", "target"),
    ],
)
def test_a_nul_character_in_a_query_parameter_is_a_422_naming_it(world, path: str, member: str):
    assert_problem(world.client("rita").get(path), 422, member)


def test_a_nul_character_in_a_body_is_a_422_naming_the_member(world):
    given = Written.now()

    response = world.client("agent").post(
        "/api/v1/sources", {"kind": "message", "content": "hi", "metadata": {"k": "\x00"}}, "json"
    )

    assert_problem(response, 422, "metadata.k")
    assert Written.now() == given
