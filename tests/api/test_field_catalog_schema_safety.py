"""A field's value_schema is run on every proposal of the field, so it must never reach the
network or the file system, recurse without end, backtrack on a pattern or cost without
bound (issue 42, point 4). A tenant admin's unsafe schema is a 422 at ``PUT`` naming
``value_schema``; one already stored (before these rules, or written around the API) never
fetches, hangs or 500s a proposal: the proposal is a 422 naming ``value``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from accounts.grants import permission_grant
from memory import value_schemas
from memory.models import FieldDefinition, MemoryVersion
from tests.api.support import assert_problem, create_entity, record_source, task_fact_body
from tests.conftest import World

CANARY = "CANARY-7f3e-fetched-schema-content"


@pytest.fixture
def admin(world: World) -> World:
    """rita administers the tenant (``tenant_admin``)."""
    permission_grant(user=world.users["rita"], tenant=world.tenant, codename="tenant_admin")
    return world


class SchemaHost:
    """A live HTTP server on a free loopback port that serves a schema carrying a canary
    and records every request it gets."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.url = ""


@contextmanager
def schema_host() -> Iterator[SchemaHost]:
    host = SchemaHost()
    body = json.dumps({"enum": [CANARY], "description": CANARY}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            host.requests.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    host.url = f"http://127.0.0.1:{server.server_address[1]}/schemas/address.json"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield host
    finally:
        server.shutdown()
        server.server_close()


def put_schema(world: World, schema: Any, name: str = "delivery_address") -> Any:
    return world.client("rita").put(f"/api/v1/fields/{name}", {"value_schema": schema}, "json")


def refused_schema(world: World, schema: Any) -> list[str]:
    """PUT is a 422 naming ``value_schema`` and nothing is stored; its messages."""
    body = assert_problem(put_schema(world, schema), 422, "value_schema")
    assert not FieldDefinition.objects.exists()
    return list(body["errors"]["value_schema"])


def store_directly(world: World, schema: Any) -> None:
    """As a schema stored before these rules, or by a database write around the API."""
    FieldDefinition.objects.create(
        tenant=world.tenant,
        name="delivery_address",
        value_schema=schema,
        updated_by="user:rita",
        updated_at=timezone.now(),
    )


def propose(world: World, value: Any) -> Any:
    agent = world.client("agent")
    dana = create_entity(agent, "Dana")
    record = record_source(agent, "business_record", "Order order-a: deliver to 4 Dock Road.")
    return agent.post("/api/v1/memories", task_fact_body(dana, record, value=value), "json")


# --- nothing leaves the schema ----------------------------------------------------------


def test_a_ref_to_a_live_local_server_is_refused_at_put_and_the_server_hears_nothing(admin):
    with schema_host() as host:
        messages = refused_schema(admin, {"$ref": host.url})

        assert host.requests == []
    assert "must be a JSON pointer inside this schema" in messages[0]
    assert CANARY not in json.dumps(messages)


def test_a_ref_hidden_below_the_root_is_refused_too(admin):
    with schema_host() as host:
        messages = refused_schema(
            admin, {"type": "object", "properties": {"street": {"$ref": host.url}}}
        )

        assert host.requests == []
    assert messages == [
        "$ref at #/properties/street/$ref must be a JSON pointer inside this schema "
        "('#' or '#/…'); a reference to another document, URL or file is not allowed"
    ]


def test_a_file_ref_is_refused_and_its_content_is_never_echoed(admin, tmp_path: Path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"enum": [CANARY]}))

    for ref in ("file:///etc/passwd", secret.as_uri(), "secret.json", "/etc/passwd#/x"):
        response = put_schema(admin, {"$ref": ref})

        assert_problem(response, 422, "value_schema")
        assert CANARY not in response.content.decode()
        assert "root:" not in response.content.decode()
    assert not FieldDefinition.objects.exists()


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"$ref": "#/$defs/postcode"}, "$ref at #/$ref points at nothing in this schema"),
        ({"enum": ["x"], "$ref": "#/enum/0"}, "points at something that is not a schema"),
        ({"$ref": "#"}, "$ref at #/$ref leads back into a schema it is inside of"),
        (
            {
                "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                "$ref": "#/$defs/a",
            },
            "a recursive reference is not allowed",
        ),
        (
            {"type": "object", "properties": {"parts": {"items": {"$ref": "#"}}}},
            "a recursive reference is not allowed",
        ),
    ],
    ids=["unresolvable", "not-a-schema", "self", "mutual", "through-items"],
)
def test_an_unresolvable_or_recursive_ref_is_refused_at_put(admin, schema, message):
    messages = refused_schema(admin, schema)

    assert any(message in m for m in messages), messages


def test_a_ref_inside_the_schema_is_followed_on_every_proposal(admin):
    schema = {
        "$defs": {"street": {"type": "string", "minLength": 3}},
        "anyOf": [{"$ref": "#/$defs/street"}, {"type": "null"}],
    }
    assert put_schema(admin, schema).status_code == 200

    assert propose(admin, "4 Dock Road").status_code == 201
    body = assert_problem(propose(admin, "4"), 422, "value")
    assert (
        "does not match the field catalog's schema for field 'delivery_address'"
        in (body["errors"]["value"][0])
    )


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"properties": {"a": {"$schema": "http://json-schema.org/draft-07/schema#"}}},
            "$schema is allowed only at the root, not at #/properties/a",
        ),
        (
            {"properties": {"a": {"$id": "http://127.0.0.1/a.json"}}},
            "$id is allowed only at the root, not at #/properties/a",
        ),
        ({"$dynamicRef": "#meta"}, "$dynamicRef at # is not supported; use $ref"),
    ],
    ids=["dialect-below-root", "id-below-root", "dynamic-ref"],
)
def test_what_would_change_how_a_ref_resolves_is_refused(admin, schema, message):
    assert refused_schema(admin, schema) == [message]


# --- patterns run on a linear-time engine -----------------------------------------------


def test_a_catastrophic_pattern_gets_the_right_answer_on_the_linear_engine(admin):
    assert put_schema(admin, {"type": "string", "pattern": "^(a+)+$"}).status_code == 200

    body = assert_problem(propose(admin, "a" * 30 + "!"), 422, "value")

    assert body["errors"]["value"] == [
        "does not match the field catalog's schema for field 'delivery_address': "
        f"'{'a' * 30}!' does not match '^(a+)+$'"
    ]
    assert propose(admin, "a" * 30).status_code == 201


def test_patterns_run_on_re2_whose_digits_are_ascii_as_json_schema_says(admin):
    """Python's ``re`` takes Arabic-Indic digits for ``\\d``; ECMA-262 and RE2 do not: the
    answer shows which engine ran."""
    assert put_schema(admin, {"type": "string", "pattern": "^\\d+ Dock Road$"}).status_code == 200

    assert_problem(propose(admin, "٤ Dock Road"), 422, "value")
    assert propose(admin, "4 Dock Road").status_code == 201


def test_pattern_properties_run_on_re2_with_additional_properties(admin):
    schema = {
        "type": "object",
        "patternProperties": {"^(a+)+$": {"type": "string"}},
        "additionalProperties": False,
    }
    assert put_schema(admin, schema).status_code == 200

    body = assert_problem(propose(admin, {"a" * 30 + "!": "x"}), 422, "value")

    assert (
        f"'{'a' * 30}!' does not match any of the regexes: '^(a+)+$'"
        in (body["errors"]["value"][0])
    )
    assert propose(admin, {"aaa": "4 Dock Road"}).status_code == 201


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^(a)\\1$"},
        {"type": "string", "pattern": "^(?=Dock).*$"},
        {"type": "object", "patternProperties": {"^(?!x)": {}}},
        {"patternProperties": {"^x": {}}, "unevaluatedProperties": False},
    ],
    ids=["backreference", "lookahead", "lookahead-key", "with-unevaluated"],
)
def test_a_pattern_the_linear_engine_cannot_run_is_refused_at_put(admin, schema):
    messages = refused_schema(admin, schema)

    assert "linear-time engine" in messages[0]


# --- size, depth and cost ---------------------------------------------------------------


def test_an_oversize_schema_is_refused_at_put(admin):
    messages = refused_schema(admin, {"type": "string", "description": "x" * 16 * 1024})

    assert messages == ["must be at most 16384 bytes of canonical JSON"]


def test_an_overdeep_schema_is_refused_at_put(admin):
    schema: dict[str, Any] = {}
    for _ in range(40):
        schema = {"not": schema}

    assert refused_schema(admin, schema) == ["must be at most 32 levels deep"]


def test_references_that_multiply_past_the_bound_are_refused_at_put(admin):
    """Thirty definitions that each use the one before twice: a few hundred bytes that
    would expand to 2^30 subschemas."""
    defs: dict[str, Any] = {"a0": {"type": "string"}}
    for i in range(1, 30):
        defs[f"a{i}"] = {"allOf": [{"$ref": f"#/$defs/a{i - 1}"}, {"$ref": f"#/$defs/a{i - 1}"}]}

    messages = refused_schema(admin, {"$defs": defs, "$ref": "#/$defs/a29"})

    assert messages == [
        "is too large with its references followed (at most 5000 subschemas, 64 deep)"
    ]


def test_a_value_too_costly_to_check_is_refused_not_run_to_the_end(admin):
    schema = {"type": "array", "items": {"allOf": [{"type": "integer"}] * 50}}
    assert put_schema(admin, schema).status_code == 200

    body = assert_problem(propose(admin, [1] * 1000), 422, "value")

    assert body["errors"]["value"] == [
        "cannot be checked: matching it against the field catalog's schema for field "
        f"'delivery_address' takes more than {value_schemas.MAX_CHECK_STEPS} steps"
    ]
    assert propose(admin, [1] * 10).status_code == 201


# --- a schema stored around the rules ---------------------------------------------------


def test_a_stored_schema_that_refs_a_live_server_never_fetches_it(admin):
    with schema_host() as host:
        store_directly(admin, {"$ref": host.url})

        response = propose(admin, "4 Dock Road")

        assert host.requests == []
    body = assert_problem(response, 422, "value")
    assert body["errors"]["value"] == [
        "cannot be checked: the field catalog's value_schema for field 'delivery_address' is "
        "unusable ($ref at #/$ref must be a JSON pointer inside this schema ('#' or '#/…'); "
        "a reference to another document, URL or file is not allowed); a tenant admin must "
        "put the field again"
    ]
    assert CANARY not in response.content.decode()
    assert not MemoryVersion.objects.exists()


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "file:///etc/passwd"},
        {"$ref": "#"},
        {"$ref": "#/$defs/missing"},
        {"type": "string", "pattern": "^(a)\\1$"},
        {"type": "string", "description": "x" * 20_000},
        json.loads('{"not": ' * 200 + "{}" + "}" * 200),
        {"type": "postcode"},
        {"properties": {"a": {"$schema": "http://json-schema.org/draft-07/schema#"}}},
    ],
    ids=[
        "file",
        "self",
        "unresolvable",
        "backreference",
        "oversize",
        "overdeep",
        "invalid",
        "dialect-below-root",
    ],
)
def test_a_stored_unsafe_schema_is_a_422_naming_value_never_a_500(admin, schema):
    store_directly(admin, schema)

    response = propose(admin, "4 Dock Road")

    body = assert_problem(response, 422, "value")
    assert "is unusable (" in body["errors"]["value"][0]
    assert "root:" not in response.content.decode()
    assert not MemoryVersion.objects.exists()


def test_a_stored_catastrophic_pattern_simply_answers(admin):
    """A pattern stored before the rules that RE2 can run is run on RE2, not refused."""
    store_directly(admin, {"type": "string", "pattern": "^(a+)+$"})

    assert_problem(propose(admin, "a" * 30 + "!"), 422, "value")
    assert propose(admin, "aaaa").status_code == 201
