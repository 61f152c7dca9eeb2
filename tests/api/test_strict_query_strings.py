"""Inputs that used to be a 500 or an HTML page (issue 42, point 9): a cursor this API did
not give out is a 422 naming ``cursor`` on every list that pages (REST and MCP), while the
cursors it does give out still walk every page; an unknown API path is a problem 404 for
every method (and another path under ``/mcp/`` too); a query parameter that is not text
(invalid UTF-8, NUL, another control character) is a 422 naming it, on every GET."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest
from django.test import Client

from accounts.grants import permission_grant
from agent_mcp.http import McpHttpApp
from core.cursors import CursorCodec
from core.errors import InvalidContent
from tests.api.support import (
    PROBLEM,
    Written,
    assert_problem,
    create_entity,
    preference_body,
    record_source,
)
from tests.conftest import World
from tests.discovery.support import propose, seed
from tests.mcp.support import InProcess, answer, problem
from tests.openapi_check import published_schema
from webhooks.models import WebhookDelivery, WebhookEndpoint

API = "/api/v1"
# What a cursor given out looks like to a client: one URL-safe token, nothing to escape.
OPAQUE = re.compile(r"[A-Za-z0-9_.-]+")


FULL_WIDTH_12 = "\uff11\uff12"  # int() reads 12
ARABIC_INDIC_3 = "\u0663"  # int() reads 3


def b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


@dataclass(frozen=True)
class Listing:
    who: str
    path: str
    params: dict[str, str]


@pytest.fixture
def lists(
    world: World, django_capture_on_commit_callbacks: Any, settings: Any
) -> dict[str, Listing]:
    """Every list that pages, each with at least two rows its reader may see."""
    settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE = True
    seeds = seed(world, django_capture_on_commit_callbacks)
    agent = world.client("agent")
    said = record_source(agent, content="Acme pays in 30 days.")
    propose(
        world,
        django_capture_on_commit_callbacks,
        "agent",
        preference_body(seeds.acme, said, field="payment_terms", value="30 days", statement="t."),
    )
    create_entity(agent, "Acme Harbor Depot", "site")
    permission_grant(tenant=world.tenant, user=world.users["rita"], codename="manage_webhooks")
    rita = world.client("rita")
    for port in (9, 10):
        body = {"url": f"http://127.0.0.1:{port}/hooks", "events": ["memory.retired"]}
        assert rita.post(f"{API}/webhooks", body, "json").status_code == 201
    endpoint = WebhookEndpoint.objects.order_by("id").first()
    assert endpoint is not None
    for n in range(2):
        WebhookDelivery.objects.create(
            tenant=world.tenant,
            endpoint=endpoint,
            event_id=f"msg_{n}",
            event_type="memory.retired",
            body="{}",
            created_at=datetime.now(UTC),
        )
    return {
        "memories": Listing("agent", "/memories", {}),
        "entities": Listing("agent", "/entities", {}),
        "entity_facts": Listing("agent", f"/entities/{seeds.acme}/facts", {}),
        "search": Listing("agent", "/search", {"q": "Acme"}),
        "proposals": Listing("agent", "/proposals", {}),
        "audit": Listing("rita", "/audit", {}),
        "webhooks": Listing("rita", "/webhooks", {}),
        "webhook_deliveries": Listing("rita", f"/webhooks/{endpoint.pk}/deliveries", {}),
    }


LISTS = [
    "memories",
    "entities",
    "entity_facts",
    "search",
    "proposals",
    "audit",
    "webhooks",
    "webhook_deliveries",
]


def _cursor_of(next_url: str) -> str:
    [cursor] = parse_qs(urlsplit(next_url).query)["cursor"]
    return cursor


def _first_cursor(world: World, listing: Listing) -> str:
    response = world.client(listing.who).get(
        f"{API}{listing.path}", {**listing.params, "limit": "1"}
    )
    assert response.status_code == 200, response.content
    return _cursor_of(response.json()["next"])


def _flip(text: str, at: int) -> str:
    return text[:at] + ("B" if text[at] == "A" else "A") + text[at + 1 :]


@pytest.mark.parametrize("name", LISTS)
def test_every_list_walks_all_its_pages_with_the_opaque_cursors_it_gives_out(
    world: World, lists: dict[str, Listing], name: str
):
    listing = lists[name]
    client = world.client(listing.who)
    response = client.get(f"{API}{listing.path}", {**listing.params, "limit": "1"})
    seen: list[Any] = []
    cursors: list[str] = []
    while True:
        assert response.status_code == 200, response.content
        [row] = response.json()["results"]
        seen.append(json.dumps(row, sort_keys=True))
        if response.json()["next"] is None:
            break
        cursors.append(_cursor_of(response.json()["next"]))
        response = client.get(response.json()["next"])

    assert len(seen) >= 2
    assert len(set(seen)) == len(seen)
    assert all(OPAQUE.fullmatch(cursor) for cursor in cursors), cursors


NOT_GIVEN_OUT: dict[str, str] = {
    "base64 of a superscript two (was a 500)": "wrI=",
    "base64 of full-width digits": b64(FULL_WIDTH_12),
    "base64 of Arabic-Indic digits": b64(ARABIC_INDIC_3),
    "full-width digits": FULL_WIDTH_12,
    "Arabic-Indic digit": ARABIC_INDIC_3,
    "random base64": "AAAA",
    "base64 of a word": b64("zzz"),
    "base64 of a plain number (the old shape)": b64("1"),
    "base64 of an id (the old shape)": b64("mem_0000000000"),
    "a token of the new shape, unsigned": "WzFd.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "NUL": "AA==",
    "too long": "A" * 5000,
}


def _refusals(world: World, listing: Listing, cursors: dict[str, str]) -> dict[str, Any]:
    """What each cursor got that is not a 422 problem naming ``cursor`` (nothing, when right)."""
    wrong: dict[str, Any] = {}
    for why, cursor in cursors.items():
        response = world.client(listing.who).get(
            f"{API}{listing.path}", {**listing.params, "cursor": cursor}
        )
        named = response.status_code == 422 and "cursor" in response.json().get("errors", {})
        if not (named and response["Content-Type"] == PROBLEM):
            wrong[why] = (response.status_code, response.content[:200])
    return wrong


@pytest.mark.parametrize("name", LISTS)
def test_a_cursor_this_list_did_not_give_out_is_a_422_naming_cursor(
    world: World, lists: dict[str, Listing], name: str
):
    assert _refusals(world, lists[name], NOT_GIVEN_OUT) == {}


TAMPERINGS: dict[str, Callable[[str], str]] = {
    "payload changed": lambda c: _flip(c, 1),
    "signature changed": lambda c: _flip(c, len(c) - 2),
    "signature removed": lambda c: c.split(".")[0],
    "padded": lambda c: c + "=",
    "upper case": lambda c: c.upper(),
    "payload of another key": lambda c: "WyJ6enoiXQ" + c[c.index(".") :],
}


@pytest.mark.parametrize("name", LISTS)
def test_a_real_cursor_changed_in_any_way_is_a_422(
    world: World, lists: dict[str, Listing], name: str
):
    cursor = _first_cursor(world, lists[name])
    tampered = {why: tamper(cursor) for why, tamper in TAMPERINGS.items()}

    assert all(changed != cursor for changed in tampered.values())
    assert _refusals(world, lists[name], tampered) == {}


@pytest.mark.parametrize("name", LISTS)
def test_another_lists_cursor_is_a_422(world: World, lists: dict[str, Listing], name: str):
    """Each list signs its own cursors: a real one from elsewhere is not this list's."""
    listing = lists[name]
    elsewhere = _first_cursor(world, lists["audit" if name != "audit" else "memories"])

    response = world.client(listing.who).get(
        f"{API}{listing.path}", {**listing.params, "cursor": elsewhere}
    )

    assert_problem(response, 422, "cursor")


def test_one_entitys_facts_cursor_does_not_page_another_entitys_facts(
    world: World, lists: dict[str, Listing]
):
    """The facts of each entity are a list of their own: its cursor names the entity."""
    cursor = _first_cursor(world, lists["entity_facts"])
    other = create_entity(world.client("agent"), "Globex Depot", "site")

    response = world.client("agent").get(f"{API}/entities/{other}/facts", {"cursor": cursor})

    assert_problem(response, 422, "cursor")


def test_a_cursor_signed_with_another_secret_key_is_a_422(
    world: World, lists: dict[str, Listing], settings: Any
):
    cursor = _first_cursor(world, lists["memories"])
    settings.SECRET_KEY = "another-secret-key-entirely"

    assert_problem(world.client("agent").get(f"{API}/memories", {"cursor": cursor}), 422, "cursor")


def test_a_cursor_survives_a_secret_key_rotation_while_the_old_key_is_a_fallback(
    world: World, lists: dict[str, Listing], settings: Any
):
    cursor = _first_cursor(world, lists["memories"])
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "the-new-secret-key-after-rotation"

    response = world.client("agent").get(f"{API}/memories", {"cursor": cursor, "limit": "1"})

    assert response.status_code == 200, response.content
    assert len(response.json()["results"]) == 1


@pytest.mark.parametrize("tool", ["search", "list_my_proposals", "list_entity_facts"])
def test_mcp_listing_tools_follow_their_own_cursors_and_refuse_any_other(
    world: World, lists: dict[str, Listing], tool: str
):
    agent = InProcess(world.keys["agent"])
    arguments = {
        "search": {"q": "Acme"},
        "list_my_proposals": {},
        "list_entity_facts": {"entity_id": lists["entity_facts"].path.split("/")[2]},
    }[tool]
    first = answer(agent.call(tool, {**arguments, "limit": 1}))
    cursor = first["next_cursor"]
    second = answer(agent.call(tool, {**arguments, "limit": 1, "cursor": cursor}))

    assert OPAQUE.fullmatch(cursor)
    assert second["results"] and second["results"] != first["results"]
    for bad in (
        "wrI=",
        b64(FULL_WIDTH_12),
        b64(ARABIC_INDIC_3),
        "AAAA",
        b64("zzz"),
        _flip(cursor, 1),
    ):
        refused = problem(agent.call(tool, {**arguments, "cursor": bad}), 422)
        assert "cursor" in refused["errors"], (bad, refused)


def test_the_codec_refuses_what_it_would_never_sign_even_when_signed(settings: Any):
    """Belt and braces: a key of the wrong shape is refused after the signature too."""
    audit = CursorCodec("test.audit", (int,))
    signer_of_anything = CursorCodec("test.audit", (str,))  # same name, other part types

    wrong_type = signer_of_anything.encode(["12"])

    assert audit.decode(audit.encode([12])) == (12,)
    with pytest.raises(InvalidContent, match="cursor"):
        audit.decode(wrong_type)
    with pytest.raises(ValueError, match="not a key"):
        audit.encode([True])
    with pytest.raises(ValueError, match="not a key"):
        audit.encode([10**18])


# --- unknown API paths -----------------------------------------------------------------

METHODS = ["get", "head", "post", "put", "patch", "delete", "options"]
UNKNOWN_PATHS = [
    "/api",
    "/api/",
    "/api/v1",
    "/api/v1/",
    "/api/v1/nope",
    "/api/v1/memories/mem_x/nope",
    "/api/v1/resolve/",
    "/api/v2/memories",
    "/api/schema",
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("path", UNKNOWN_PATHS)
def test_an_unknown_api_path_is_a_problem_404_for_every_method_not_the_csrf_page(
    db: Any, method: str, path: str
):
    client = Client(enforce_csrf_checks=True)

    response = getattr(client, method)(path, content_type="application/json")

    assert response.status_code == 404, response.content[:200]
    assert response["Content-Type"] == PROBLEM
    if method != "head":
        assert response.json()["status"] == 404


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_an_unknown_api_path_is_a_problem_404_in_a_signed_in_session_too(world: World, method: str):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.users["rita"])

    response = getattr(client, method)("/api/v1/nope", content_type="application/json")

    assert_problem(response, 404)


def _mcp_http(method: str, path: str) -> tuple[int, dict[bytes, bytes], dict[str, Any]]:
    """One request to the MCP server's HTTP application, as ``config.wsgi`` hands it over."""
    sent: list[dict[str, Any]] = []
    headers = [(b"host", b"mcp.example"), (b"authorization", b"Bearer not-even-read")]
    scope: dict[str, Any] = {"type": "http", "method": method, "path": path, "headers": headers}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    # In a thread of its own, as in tests/mcp/test_mcp_telemetry.py: the browser tests
    # leave an event loop running in the main thread.
    app: Any = McpHttpApp()
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(anyio.run, app, scope, receive, send).result()
    return sent[0]["status"], dict(sent[0]["headers"]), json.loads(sent[1]["body"])


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE"])
@pytest.mark.parametrize("path", ["/mcp/nope", "/mcp/v1/tools", "/mcp//"])
def test_another_path_under_mcp_is_a_problem_404_whatever_the_method_or_key(
    settings: Any, method: str, path: str
):
    settings.ALLOWED_HOSTS = ["mcp.example"]

    status, headers, body = _mcp_http(method, path)

    assert status == 404
    assert headers[b"content-type"] == PROBLEM.encode()
    assert body["status"] == 404


@pytest.mark.parametrize("method", ["PUT", "PATCH", "OPTIONS"])
def test_a_method_mcp_does_not_take_is_a_problem_405(settings: Any, method: str):
    settings.ALLOWED_HOSTS = ["mcp.example"]

    status, headers, body = _mcp_http(method, "/mcp")

    assert status == 405
    assert headers[b"content-type"] == PROBLEM.encode()
    assert headers[b"allow"] == b"GET, POST, DELETE"
    assert body["status"] == 405


# --- query strings ---------------------------------------------------------------------

BAD_VALUES = {
    "invalid UTF-8": ("%FF", "must be valid UTF-8"),
    "a truncated UTF-8 sequence": ("ab%C3", "must be valid UTF-8"),
    "an encoded surrogate": ("%ED%A0%80", "must be valid UTF-8"),
    "NUL": ("%00", "must not contain NUL characters"),
    "NUL inside": ("Ac%00me", "must not contain NUL characters"),
    "a line feed": ("Acme%0A", "must not contain control characters"),
    "DEL": ("%7F", "must not contain control characters"),
    "a C1 control": ("%C2%85", "must not contain control characters"),
}


@pytest.mark.parametrize(("value", "why"), list(BAD_VALUES.values()), ids=list(BAD_VALUES))
def test_a_search_query_that_is_not_text_is_a_422_naming_q(world: World, value: str, why: str):
    response = world.client("agent").get(f"{API}/search?q={value}")

    body = assert_problem(response, 422, "q")
    assert body["errors"]["q"] == [why]


def _get_operations() -> dict[str, list[str]]:
    """Every GET of the published schema that takes query parameters, with their names."""
    found = {}
    for path, item in published_schema()["paths"].items():
        parameters = [p for p in item.get("get", {}).get("parameters", []) if p["in"] == "query"]
        if parameters:
            found[re.sub(r"\{[^}]+\}", "x_1", path)] = sorted(p["name"] for p in parameters)
    return found


GETS = _get_operations()


def test_the_schema_offers_gets_with_query_parameters():
    assert len(GETS) >= 8
    assert GETS["/api/v1/proposals"] == ["cursor", "limit", "status"]


@pytest.mark.parametrize("path", sorted(GETS))
def test_every_query_parameter_of_every_get_refuses_what_is_not_text(world: World, path: str):
    """Before the key is read, the route found or the view run: the boundary refuses it."""
    wrong = {}
    for name in GETS[path]:
        for value in ("%FF", "%00", "%1B"):
            for client in (world.client("rita"), Client()):
                response = client.get(f"{path}?{name}={value}")
                if response.status_code != 422 or name not in response.json()["errors"]:
                    wrong[f"{name}={value}"] = (response.status_code, response.content[:200])

    assert wrong == {}


def test_a_parameter_name_that_is_not_text_is_named_as_best_it_can_be(world: World):
    response = world.client("agent").get(f"{API}/search?q=Acme&%FFx=1&a%00=2")

    body = assert_problem(response, 422)
    assert body["errors"] == {
        "a\\x00": ["the name must not contain NUL characters"],
        "\\xffx": ["the name must be valid UTF-8"],
    }


def test_text_that_is_only_unusual_is_still_accepted(world: World):
    """Percent-encoded UTF-8, a plus for a space, an emoji, an empty value: plain text."""
    agent = world.client("agent")

    assert agent.get(f"{API}/search?q=Caf%C3%A9+%F0%9F%98%80").status_code == 200
    assert agent.get(f"{API}/entities?q=%E6%9D%B1%E4%BA%AC").status_code == 200
    assert agent.get(f"{API}/entities?q=").status_code == 200


def test_a_dashboard_query_that_is_not_text_is_refused_the_same_way(world: World):
    client = Client()
    client.force_login(world.users["rita"])

    response = client.get("/?q=%FF")

    assert_problem(response, 422, "q")


def test_a_write_with_a_query_that_is_not_text_is_refused_and_changes_nothing(world: World):
    given = Written.now()

    response = world.client("agent").post(
        f"{API}/sources?note=%FF", {"kind": "message", "content": "hi"}, "json"
    )

    assert_problem(response, 422, "note")
    assert Written.now() == given
