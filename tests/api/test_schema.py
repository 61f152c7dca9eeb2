"""Liveness, readiness and the OpenAPI description: what an operator's probes and an
integrator's code generator rely on (docs/api.md, Health and schema)."""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from operations import health

OPENAPI_JSON = "application/vnd.oai.openapi+json"

# Every operation of docs/api.md, with its path parameters written as {}.
CONTRACT = [
    ("post", "/api/v1/sources"),
    ("get", "/api/v1/sources/{}"),
    ("post", "/api/v1/sources/{}/revoke"),
    ("post", "/api/v1/sources/{}/visibility"),
    ("post", "/api/v1/entities"),
    ("get", "/api/v1/entities"),
    ("get", "/api/v1/entities/{}"),
    ("post", "/api/v1/entities/{}/aliases"),
    ("post", "/api/v1/entities/match"),
    ("post", "/api/v1/memories"),
    ("get", "/api/v1/memories"),
    ("get", "/api/v1/memories/{}"),
    ("get", "/api/v1/memories/{}/versions"),
    ("post", "/api/v1/memories/{}/versions"),
    ("get", "/api/v1/memories/{}/versions/{}"),
    ("post", "/api/v1/memories/{}/approve"),
    ("post", "/api/v1/memories/{}/reject"),
    ("post", "/api/v1/memories/{}/retire"),
    ("post", "/api/v1/memories/{}/recheck"),
    ("post", "/api/v1/memories/{}/scenarios"),
    ("get", "/api/v1/memories/{}/checks"),
    ("post", "/api/v1/memories/{}/link-subject"),
    ("post", "/api/v1/resolve"),
    ("get", "/api/v1/tasks/{}"),
    ("get", "/api/v1/policy"),
    ("post", "/api/v1/policy"),
    ("post", "/api/v1/policy/revalidate"),
    ("get", "/api/v1/revalidations/{}"),
    ("get", "/api/v1/audit"),
    ("get", "/api/v1/audit/verify"),
    ("get", "/api/v1/entities/{}/export"),
    ("post", "/api/v1/entities/{}/erase"),
    ("get", "/api/v1/erasures/{}"),
    ("post", "/api/v1/webhooks/{}/enable"),
]


@pytest.fixture(scope="module")
def schema(django_db_blocker) -> dict[str, Any]:
    with django_db_blocker.unblock():
        response = APIClient().get("/api/schema/", HTTP_ACCEPT=OPENAPI_JSON)
    assert response.status_code == 200
    assert response["Content-Type"].startswith(OPENAPI_JSON)
    return dict(response.json())


def _operations(schema: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (method, re.sub(r"\{[^}]+\}", "{}", path))
        for path, item in schema["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    }


def test_the_schema_is_openapi_3(schema):
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "Memgov API"


@pytest.mark.parametrize(("method", "path"), CONTRACT, ids=[f"{m} {p}" for m, p in CONTRACT])
def test_the_schema_describes_every_operation_of_the_contract(schema, method: str, path: str):
    assert (method, path) in _operations(schema)


def test_the_schema_offers_no_write_to_an_immutable_source(schema):
    assert {m for m, p in _operations(schema) if p == "/api/v1/sources/{}"} == {"get"}


def test_the_correction_operation_documents_if_match(schema):
    operation = schema["paths"]["/api/v1/memories/{memory_id}/versions"]["post"]

    headers = [p for p in operation["parameters"] if p["in"] == "header"]
    assert [(h["name"], h["required"]) for h in headers] == [
        ("If-Match", True),
        ("Idempotency-Key", False),
    ]


def test_every_post_documents_idempotency_key_as_the_contract_offers_it(schema):
    posts = [(path, item["post"]) for path, item in schema["paths"].items() if "post" in item]

    assert len(posts) > 20
    for path, operation in posts:
        headers = {p["name"] for p in operation.get("parameters", []) if p["in"] == "header"}
        assert "Idempotency-Key" in headers, path


def test_memory_answers_document_their_etag_and_refusals_their_retry_after(schema):
    memories = schema["paths"]["/api/v1/memories/{memory_id}"]["get"]["responses"]
    corrected = schema["paths"]["/api/v1/memories/{memory_id}/versions"]["post"]["responses"]
    throttled = schema["paths"]["/api/v1/resolve"]["post"]["responses"]["429"]

    assert "ETag" in memories["200"]["headers"] and "ETag" in corrected["201"]["headers"]
    assert "Retry-After" in throttled["headers"]
    assert "headers" not in schema["paths"]["/api/v1/resolve"]["post"]["responses"]["200"]


def test_operation_ids_are_unique(schema):
    ids = [op["operationId"] for item in schema["paths"].values() for op in item.values()]

    assert len(ids) == len(set(ids))


def test_the_schema_is_served_as_yaml_by_default(db):
    response = APIClient().get("/api/schema/")

    assert response.status_code == 200
    assert response.content.startswith(b"openapi: 3.")


def test_the_docs_page_renders_for_the_schema(db):
    response = APIClient().get("/api/docs/")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert b"swagger-ui" in response.content
    # The init script is a file, not inline, so the page passes its CSP (issue 11).
    assert b"<script>" not in response.content
    # Swagger UI comes from our static files (drf-spectacular-sidecar): no CDN allowed.
    assert "script-src 'self';" in response["Content-Security-Policy"]
    assert b"cdn.jsdelivr.net" not in response.content
    assert b"/static/drf_spectacular_sidecar/swagger-ui-dist/" in response.content
    script = APIClient().get("/api/docs/?script=")
    assert script["Content-Type"].startswith("application/javascript")
    assert b"/api/schema/" in script.content


def test_redoc_renders_from_static_files_without_an_inline_script(db):
    response = APIClient().get("/api/redoc/")

    assert response.status_code == 200
    assert b"/static/drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js" in response.content
    assert b"<script>" not in response.content
    assert "script-src 'self';" in response["Content-Security-Policy"]


def test_the_favicon_is_served_not_a_404(client):
    response = client.get("/favicon.ico", follow=True)

    assert response.status_code == 200
    body = response.streaming_content if response.streaming else [response.content]
    assert b"<svg" in b"".join(body)


def test_healthz_needs_no_database(client):
    """Liveness says the process answers, even when nothing else does."""
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_a_write_to_a_health_path_is_a_405_problem_not_the_csrf_page(path):
    client = Client(enforce_csrf_checks=True)

    response = client.post(path, {})

    assert response.status_code == 405
    assert response["Content-Type"] == "application/problem+json"
    assert response["Allow"] == "GET, HEAD"


def test_readyz_names_every_check_when_all_answer(client, db):
    response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checked": ["database", "cache", "broker"],
        "semantic": "off",
    }


def _down() -> bool:
    raise ConnectionError("connection refused")


def test_readyz_is_a_503_naming_the_database_when_it_does_not_answer(client, db, monkeypatch):
    monkeypatch.setattr(health, "_database_ok", _down)

    response = client.get("/readyz")

    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "failing": "database"}


@pytest.mark.parametrize("failing", ["cache", "broker"])
def test_readyz_stays_ready_naming_a_redis_role_that_does_not_answer(
    client, db, monkeypatch, failing: str
):
    """Resolves read the database and writes wait in the outbox: the pod can serve."""
    monkeypatch.setattr(health, f"_{failing}_ok", _down)

    response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "degraded",
        "checked": ["database", "cache", "broker"],
        "degraded": [failing],
        "semantic": "off",
    }


def test_readyz_reports_a_check_that_answers_wrongly(client, db, monkeypatch):
    monkeypatch.setattr(health, "_cache_ok", lambda: False)

    response = client.get("/readyz")

    assert response.json()["degraded"] == ["cache"]


def test_readyz_answers_within_its_timeout_when_a_check_hangs(client, db, monkeypatch, settings):
    settings.MEMGOV_READY_TIMEOUT_SECONDS = 0.2
    release = threading.Event()
    monkeypatch.setattr(health, "_database_ok", lambda: release.wait(5))
    started = time.monotonic()

    response = client.get("/readyz")

    took = time.monotonic() - started
    release.set()
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "failing": "timeout"}
    assert took < 1.0


def test_readyz_is_not_answered_through_a_proxy(client, db):
    """The Ingress adds X-Forwarded-For; probes call the pod directly and never do."""
    response = client.get("/readyz", HTTP_X_FORWARDED_FOR="203.0.113.9")

    assert response.status_code == 404


def test_the_schema_documents_the_source_visibility_body(schema):
    operation = schema["paths"]["/api/v1/sources/{source_id}/visibility"]["post"]
    ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    body = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]

    assert operation["operationId"] == "source_visibility_change"
    assert sorted(body["required"]) == ["reason", "visibility"]
    assert body["properties"]["visibility"]["type"] == "array"


def _schema() -> dict[str, Any]:
    from tests.openapi_check import published_schema

    return published_schema()


def _ok_schema(path: str, method: str = "get") -> dict[str, Any]:
    schema: dict[str, Any] = _schema()["paths"][path][method]["responses"]
    ok = schema.get("200") or schema["201"]
    return dict(ok["content"]["application/json"]["schema"])


def test_lists_are_declared_as_arrays():
    """Issue 11: /versions and /checks answer arrays and were declared objects."""
    for path in ("/api/v1/memories/{memory_id}/versions", "/api/v1/memories/{memory_id}/checks"):
        assert _ok_schema(path)["type"] == "array", path


def test_the_audit_page_next_is_nullable():
    page = _schema()["components"]["schemas"]["AuditPage"]

    assert page["properties"]["next"]["nullable"] is True


def test_every_operation_documents_its_problem_answers():
    for path, operations in _schema()["paths"].items():
        for method, operation in operations.items():
            documented = set(operation["responses"])
            expected = {"400", "401", "403", "404", "422", "429"}
            if method == "post":
                expected |= {"409", "413", "415"}
            assert expected <= documented, (method, path, expected - documented)
            problem = operation["responses"]["422"]["content"]["application/problem+json"]
            assert problem["schema"] == {"$ref": "#/components/schemas/Problem"}
    corrections = _schema()["paths"]["/api/v1/memories/{memory_id}/versions"]["post"]
    assert "428" in corrections["responses"]
    resolve = _schema()["paths"]["/api/v1/resolve"]["post"]
    assert "410" in resolve["responses"]


def test_a_response_that_breaks_the_schema_is_caught_by_the_checker():
    """The checker every test's API answers pass through (tests/conftest.py) can fail."""
    from tests.openapi_check import response_violation

    wrong = response_violation("GET", "/api/v1/memories/mem_x/versions", 200, {"not": "a list"})
    undocumented = response_violation("GET", "/api/v1/memories/mem_x", 418, {})

    assert wrong is not None and "is not of type 'array'" in wrong
    assert undocumented is not None and "418 is not documented" in undocumented


def test_the_entity_list_and_match_are_typed(schema):
    listing = schema["paths"]["/api/v1/entities"]["get"]
    assert {p["name"] for p in listing["parameters"]} >= {"q", "limit", "cursor"}
    page = listing["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert page.endswith("/EntityPageOut")
    matched_on = schema["components"]["schemas"]["MatchCandidateOut"]["properties"]["matched_on"]
    assert matched_on["allOf"] == [{"$ref": "#/components/schemas/MatchedOnEnum"}]
    assert schema["components"]["schemas"]["MatchedOnEnum"]["enum"] == [
        "name",
        "alias",
        "name_token",
        "alias_token",
        "alias_prefix",
        "transliteration",
        "semantic",
    ]


# Issue 44, point 13: what validation enforces and JSON Schema can state is in the schema,
# so a client generated from it sends what the API takes.
def _parameter(schema: dict[str, Any], path: str, method: str, name: str) -> dict[str, Any]:
    found = [p for p in schema["paths"][path][method]["parameters"] if p["name"] == name]
    assert len(found) == 1, (path, method, name)
    return dict(found[0]["schema"])


def _lists(schema: dict[str, Any]) -> list[str]:
    return [
        path
        for path, item in schema["paths"].items()
        if "get" in item and any(p["name"] == "cursor" for p in item["get"].get("parameters", []))
    ]


def test_every_list_states_the_limit_and_the_cursor_it_takes(schema):
    lists = _lists(schema)

    assert len(lists) == 8
    for path in lists:
        limit = _parameter(schema, path, "get", "limit")
        cursor = _parameter(schema, path, "get", "cursor")
        assert (limit["type"], limit["minimum"]) == ("integer", 1), path
        assert limit["maximum"] == 200, path  # docs/api.md: every list, up to 200
        assert cursor["pattern"] == "^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{43}$", path


def test_search_states_that_q_says_something_and_filters_are_choices(schema):
    q = _parameter(schema, "/api/v1/search", "get", "q")
    status = _parameter(schema, "/api/v1/proposals", "get", "status")

    assert (q["minLength"], q["maxLength"]) == (1, 200)
    assert re.search(q["pattern"], " \t ") is None and re.search(q["pattern"], "Dana")
    assert re.search(q["pattern"], "Dana\x00") is None
    assert "active" in status["enum"]


def test_the_field_name_and_if_match_state_their_patterns(schema):
    name = _parameter(schema, "/api/v1/fields/{name}", "put", "name")
    if_match = _parameter(schema, "/api/v1/memories/{memory_id}/versions", "post", "If-Match")

    assert name["pattern"] == "^[A-Za-z][A-Za-z0-9_.\\-]{0,99}$"
    assert [bool(re.match(if_match["pattern"], v)) for v in ('"2"', 'W/"2"', "2", "two")] == [
        True,
        True,
        True,
        False,
    ]


def test_request_bodies_state_non_blank_texts_and_their_counts(schema):
    components = schema["components"]["schemas"]
    clarify, context = components["ClarifyInput"], components["ContextInput"]["properties"]

    assert clarify["properties"]["choice"]["pattern"] == "\\S"
    assert context["subjects"]["items"]["pattern"] == "\\S"
    assert context["context"]["maxProperties"] == 32
    assert context["fields"]["minItems"] == 1
    assert components["ReasonInput"]["properties"]["reason"]["pattern"] == "\\S"


def test_a_blank_text_the_schema_refuses_is_refused_by_the_api_naming_it(world):
    agent = world.client("agent")

    answer = agent.get("/api/v1/search", {"q": "   "})

    assert answer.status_code == 422 and list(answer.json()["errors"]) == ["q"]


def test_scope_values_are_stated_as_non_blank_strings_of_at_most_200_characters(schema):
    """A value over 200 characters was a 500 on PostgreSQL (issue 44): the schema now says
    what the API takes, as it does for /context's context."""
    components = schema["components"]["schemas"]

    for shape in ("ProposalInput", "CorrectionInput"):
        value = components[shape]["properties"]["scope"]["additionalProperties"]
        assert (value["type"], value["maxLength"], value["pattern"]) == ("string", 200, "\\S")
