"""Issue 44, points 10 and 11, walked with real components: a live HTTP server, the Redis
broker and a Celery worker running the gate checks. An agent says "send Dana's order
there", answers the subject, then the value from Dana's addresses, and its proposal goes
live after review; a language "it" is stored as the ISO code; a second home address ties
and the agent is told which memory to correct."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from accounts.grants import permission_grant
from tests.conftest import World, iso, later, needs
from tests.integration.test_workflow_worker import broker, embedded_worker, wait_for

__all__ = ["broker"]  # the fixture, used by name

pytestmark = [
    needs("redis"),
    needs("postgres"),
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
]

HOME, OFFICE = "12 Elm Street", "4 Dock Road"


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


class Api:
    """The personas of ``world`` over HTTP."""

    def __init__(self, base: str, world: World) -> None:
        self.base, self.world = f"{base}/api/v1", world
        self.http = httpx.Client(timeout=30.0)

    def call(self, who: str, method: str, path: str, body: Any = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.world.keys[who]}"}
        return self.http.request(method, f"{self.base}{path}", json=body, headers=headers)

    def ok(self, who: str, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        response = self.call(who, method, path, body)
        assert response.status_code == status, response.text
        return response.json()

    def status(self, memory_id: str) -> str:
        return str(self.ok("agent", "GET", f"/memories/{memory_id}")["status"])

    def reasons(self, memory_id: str) -> list[str]:
        listed = self.ok("agent", "GET", "/proposals?limit=100")["results"]
        return next(p["reasons"] for p in listed if p["memory_id"] == memory_id)


@pytest.fixture
def api(live_server: Any, world: World, broker: None) -> Iterator[Api]:
    client = Api(live_server.url, world)
    yield client
    client.http.close()


def record(api: Api, kind: str, content: str) -> str:
    body = {"kind": kind, "content": content}
    return str(api.ok("agent", "POST", "/sources", body, status=201)["id"])


def propose(api: Api, **body: Any) -> Any:
    return api.ok("agent", "POST", "/memories", body, status=201)


def preference(api: Api, subject: str, field: str, value: Any, **extra: Any) -> dict[str, Any]:
    said = record(api, "message", f"Dana: my {field} is {value}.")
    return {
        "kind": "preference",
        "subject": subject,
        "field": field,
        "value": value,
        "statement": f"Dana's {field} is {value}.",
        "scope": {},
        "owner": "nora",
        "expires_at": None,
        "sources": [said],
        **extra,
    }


def settled(api: Api, memory_id: str) -> str:
    wait_for("the gate run", lambda: api.status(memory_id) not in ("checking",))
    return api.status(memory_id)


def test_an_agent_walks_there_for_dana_a_literal_it_and_a_tie_with_a_real_worker(
    api: Api, world: World
):
    with embedded_worker():
        dana = api.ok("agent", "POST", "/entities", {"kind": "customer", "name": "Dana Kim"}, 201)
        dana_id = dana["id"]
        home = propose(api, **preference(api, dana_id, "delivery_address", HOME))
        assert settled(api, home["id"]) == "active"
        order_a = record(api, "business_record", "Order order-a: deliver to 4 Dock Road.")
        office = propose(
            api,
            kind="task_fact",
            subject=dana_id,
            field="delivery_address",
            value=OFFICE,
            statement="Order order-a goes to Dana's office.",
            scope={"task": "order-a"},
            owner="rita",
            expires_at=iso(later(7)),
            sources=[order_a],
        )
        api.ok("rita", "POST", f"/memories/{office['id']}/approve", {"comment": "per order"})
        assert settled(api, office["id"]) == "active"

        # "Send Dana's order there": neither the subject nor the value named.
        order_b = record(api, "business_record", "Order order-b: customer says send it there.")
        held = propose(
            api,
            kind="task_fact",
            subject_mention="Dana",
            field="delivery_address",
            value="there",
            statement="Order order-b goes where Dana said.",
            scope={"task": "order-b"},
            owner="rita",
            expires_at=iso(later(7)),
            sources=[order_b],
        )
        assert held["needs_clarification"]["member"] == "subject"
        assert api.reasons(held["id"])[1].startswith("held: which delivery_address “there”")
        path = f"/memories/{held['id']}/clarify"
        asked = api.ok("agent", "POST", path, {"choice": dana_id})["needs_clarification"]
        assert {o["value"] for o in asked["options"]} == {HOME, OFFICE}
        [said] = api.reasons(held["id"])
        assert said.startswith("held: which delivery_address does “there” mean? Answer with")
        office_option = next(o["id"] for o in asked["options"] if o["value"] == OFFICE)
        answered = api.ok("agent", "POST", path, {"choice": office_option})
        assert (answered["status"], answered["value"]) == ("pending_review", OFFICE)
        api.ok("rita", "POST", f"/memories/{held['id']}/approve", {"comment": "per order"})
        assert settled(api, held["id"]) == "active"

        # "it" is Italian where the catalog says the field takes a language code.
        permission_grant(user=world.users["rita"], tenant=world.tenant, codename="tenant_admin")
        schema = {"value_schema": {"enum": ["de", "en", "it"]}}
        api.ok("rita", "PUT", "/fields/language", schema)
        italian = propose(api, **preference(api, dana_id, "language", "it"))
        assert italian["needs_clarification"] is None
        assert settled(api, italian["id"]) == "active"

        # A second home address ties with the first: the agent is told which to correct.
        other = propose(api, **preference(api, dana_id, "delivery_address", "7 Oak Lane"))
        assert settled(api, other["id"]) == "checks_failed"
        assert api.reasons(other["id"])[0] == (
            f"its checks failed: {home['id']} already holds “{HOME}” for this scope: propose "
            f"a correction of {home['id']} (correct_memory) instead of a new memory"
        )
    facts = api.ok(
        "agent", "POST", "/resolve", {"subject": dana_id, "context": {"task": "order-b"}}
    )
    assert {f["field"]: f["value"] for f in facts["facts"]} == {
        "delivery_address": OFFICE,
        "language": "it",
    }
