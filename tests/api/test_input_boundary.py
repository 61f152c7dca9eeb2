"""Issue 11's reproductions: every malformed input is a 4xx problem, never a 500.

Each test runs on SQLite by default and on PostgreSQL with ``DATABASE_URL`` set, where the
``DataError`` ones (NUL in a cursor, lone surrogates in jsonb) used to surface."""

from __future__ import annotations

import base64
import io
import json

import pytest
from django.test import Client

from tests.api.support import Written, assert_problem, create_entity, preference_body, record_source


def _raw_post(world, path: str, body: bytes, *, chunked: bool, **headers: str):
    """A POST whose body arrives the way gunicorn hands over a chunked request: the
    de-chunked stream in ``wsgi.input`` and no ``Content-Length``."""
    client = Client()
    environ = {
        "HTTP_AUTHORIZATION": f"Bearer {world.keys['agent']}",
        "CONTENT_TYPE": "application/json",
        "wsgi.input": io.BytesIO(body),
        **headers,
    }
    if chunked:
        environ["HTTP_TRANSFER_ENCODING"] = "chunked"
    request = client.request(REQUEST_METHOD="POST", PATH_INFO=path, QUERY_STRING="", **environ)
    return request


def _post_json_text(world, path: str, text: str, **headers: str):
    """Send JSON text exactly as written (escapes such as ``\\ud800`` included)."""
    return world.client("agent").post(path, text, content_type="application/json", **headers)


def test_metadata_nested_5000_levels_deep_is_a_400_and_writes_nothing(world):
    deep = "[" * 5000 + "]" * 5000
    given = Written.now()

    response = _post_json_text(
        world, "/api/v1/sources", f'{{"kind": "message", "content": "hi", "metadata": {deep}}}'
    )

    assert "nested" in assert_problem(response, 400)["detail"]
    assert Written.now() == given


def test_json_64_levels_deep_is_accepted_and_65_is_refused(world):
    def body(levels: int) -> str:
        """The whole body nested ``levels`` deep: the outer object plus the metadata."""
        metadata = '{"a": ' * (levels - 2) + "{}" + "}" * (levels - 2)
        return f'{{"kind": "message", "content": "hi", "metadata": {metadata}}}'

    accepted = _post_json_text(world, "/api/v1/sources", body(64))
    refused = _post_json_text(world, "/api/v1/sources", body(65))

    assert accepted.status_code == 201, accepted.content
    assert_problem(refused, 400)


def test_brackets_inside_strings_do_not_count_as_nesting(world):
    response = _post_json_text(
        world,
        "/api/v1/sources",
        json.dumps({"kind": "message", "content": "[" * 1000 + '"{' * 100}),
    )

    assert response.status_code == 201, response.content


def test_a_lone_surrogate_key_in_source_metadata_is_a_422_naming_it(world):
    given = Written.now()

    response = _post_json_text(
        world,
        "/api/v1/sources",
        '{"kind": "message", "content": "hi", "metadata": {"\\ud800": 1}}',
    )

    assert_problem(response, 422, "metadata")
    assert Written.now() == given


def test_a_lone_surrogate_value_in_a_proposal_is_a_422_naming_it(world):
    agent = world.client("agent")
    body = preference_body(create_entity(agent), record_source(agent))
    body["value"] = "SURROGATE"
    text = json.dumps(body).replace("SURROGATE", "\\udfff")
    given = Written.now()

    response = _post_json_text(world, "/api/v1/memories", text)

    assert_problem(response, 422, "value")
    assert Written.now() == given


def test_a_well_formed_surrogate_pair_is_an_ordinary_character(world):
    response = _post_json_text(
        world, "/api/v1/sources", '{"kind": "message", "content": "ok \\ud83d\\ude00"}'
    )

    assert response.status_code == 201, response.content
    assert response.json()["content"] == "ok \U0001f600"


@pytest.mark.parametrize("path", ["/api/v1/memories", "/api/v1/audit"])
def test_a_cursor_that_decodes_to_a_nul_is_a_422(world, path: str):
    assert_problem(world.client("rita").get(f"{path}?cursor=AA=="), 422, "cursor")


@pytest.mark.parametrize("path", ["/api/v1/memories", "/api/v1/audit"])
@pytest.mark.parametrize("limit", ["²", "٣", "1" * 5000, "+5", " 5", "0x10", "0", "201"])
def test_a_limit_that_is_not_plain_ascii_digits_in_range_is_a_422(world, path: str, limit: str):
    assert_problem(world.client("rita").get(path, {"limit": limit}), 422, "limit")


@pytest.mark.parametrize("key", [b"9" * 5000, "\u00b2".encode(), b"-1", b"\xff"])
def test_an_audit_cursor_that_is_not_a_plain_sequence_number_is_a_422(world, key: bytes):
    token = base64.urlsafe_b64encode(key).decode()

    assert_problem(world.client("rita").get("/api/v1/audit", {"cursor": token}), 422, "cursor")


@pytest.fixture
def memory_id(world) -> str:
    agent = world.client("agent")
    body = preference_body(create_entity(agent), record_source(agent))
    response = agent.post("/api/v1/memories", body, "json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


@pytest.mark.parametrize("if_match", ['"²"', '"٣"', '"' + "1" * 5000 + '"', "1" * 5000, '"-1"'])
def test_an_if_match_that_is_not_a_plain_version_number_is_a_422(
    world, memory_id: str, if_match: str
):
    given = Written.now()

    response = world.client("agent").post(
        f"/api/v1/memories/{memory_id}/versions",
        {"value": "4 Dock Road"},
        "json",
        HTTP_IF_MATCH=if_match,
    )

    assert_problem(response, 422, "If-Match")
    assert Written.now() == given


@pytest.mark.parametrize("header", ["HTTP_IF_MATCH", "HTTP_IDEMPOTENCY_KEY"])
def test_a_nul_in_a_header_is_a_400(world, memory_id: str, header: str):
    given = Written.now()

    response = world.client("agent").post(
        f"/api/v1/memories/{memory_id}/versions", {"value": "x"}, "json", **{header: '"1\x00"'}
    )

    assert_problem(response, 400)
    assert Written.now() == given


def test_a_chunked_valid_body_is_read_not_ignored(world):
    body = json.dumps({"kind": "message", "content": "Sent chunked."}).encode()

    response = _raw_post(world, "/api/v1/sources", body, chunked=True)

    assert response.status_code == 201, response.content
    assert response.json()["content"] == "Sent chunked."


def test_a_chunked_body_over_256_kib_is_a_413_and_writes_nothing(world):
    body = json.dumps({"kind": "message", "content": "x" * (300 * 1024)}).encode()
    given = Written.now()

    response = _raw_post(world, "/api/v1/sources", body, chunked=True)

    assert_problem(response, 413)
    assert Written.now() == given


@pytest.mark.parametrize("length", ["²", "1" * 5000, "-1", "+5"])
def test_a_content_length_that_is_not_plain_digits_is_a_400(world, length: str):
    response = world.client("agent").post(
        "/api/v1/sources", "{}", content_type="application/json", CONTENT_LENGTH=length
    )

    assert_problem(response, 400)
