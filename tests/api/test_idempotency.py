"""``Idempotency-Key`` on POST: an agent that retries after a timeout gets the first answer
instead of recording the same evidence or proposal twice (docs/api.md, Conventions)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.models import IdempotencyRecord
from tests.api.support import Written, assert_problem, create_entity, preference_body, record_source


def _post(client, path, body, key):
    return client.post(path, body, "json", HTTP_IDEMPOTENCY_KEY=key)


SOURCE = {
    "kind": "business_record",
    "content": "Order order-a: to the office.",
    "external_ref": "ORD-A",
}


def test_a_retry_with_the_same_key_and_body_gets_the_first_answer_and_writes_nothing(world):
    agent = world.client("agent")
    first = _post(agent, "/api/v1/sources", SOURCE, "retry-1")
    given = Written.now()

    again = _post(agent, "/api/v1/sources", SOURCE, "retry-1")

    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert again["Content-Type"] == "application/json"
    assert Written.now() == given


def test_without_a_key_a_retry_records_the_source_twice(world):
    agent = world.client("agent")

    first = agent.post("/api/v1/sources", SOURCE, "json").json()
    second = agent.post("/api/v1/sources", SOURCE, "json").json()

    assert first["id"] != second["id"]


def test_a_replayed_proposal_keeps_its_etag(world):
    agent = world.client("agent")
    dana = create_entity(agent)
    chat = record_source(agent)
    body = preference_body(dana, chat, field="tone", value="brief", statement="Keep it brief.")
    first = _post(agent, "/api/v1/memories", body, "propose-1")
    given = Written.now()

    again = _post(agent, "/api/v1/memories", body, "propose-1")

    assert again.status_code == 201
    assert again["ETag"] == first["ETag"] == '"1"'
    assert again.json()["id"] == first.json()["id"]
    assert Written.now() == given


def test_the_same_key_with_another_body_is_a_422_and_writes_nothing(world):
    agent = world.client("agent")
    first = _post(agent, "/api/v1/sources", SOURCE, "retry-2")
    given = Written.now()

    other = _post(agent, "/api/v1/sources", {**SOURCE, "content": "Order order-b."}, "retry-2")

    assert_problem(other, 422, "Idempotency-Key")
    assert Written.now() == given
    assert agent.get(f"/api/v1/sources/{first.json()['id']}").json()["content"] == SOURCE["content"]


def test_the_same_key_on_another_endpoint_is_a_422(world):
    agent = world.client("agent")
    _post(agent, "/api/v1/sources", SOURCE, "retry-3")

    response = _post(agent, "/api/v1/entities", {"kind": "customer", "name": "Dana"}, "retry-3")

    assert_problem(response, 422, "Idempotency-Key")


def test_keys_are_scoped_per_tenant(world):
    """Globex choosing the same key as Acme runs its own request and sees nothing of Acme's."""
    acme = _post(world.client("agent"), "/api/v1/sources", SOURCE, "shared-key")

    globex = _post(world.client("zed"), "/api/v1/sources", SOURCE, "shared-key")

    assert globex.status_code == 201
    assert "Idempotent-Replayed" not in globex
    assert globex.json()["id"] != acme.json()["id"]
    assert IdempotencyRecord.objects.filter(key="shared-key").count() == 2


def test_another_principal_of_the_tenant_never_gets_someone_elses_answer(world):
    """The first answer may hold what only its caller may see, and even a refusal would
    tell another caller the key was used: keys are scoped per principal (issue 11)."""
    first = _post(world.client("agent"), "/api/v1/sources", SOURCE, "collide")

    response = _post(world.client("nora"), "/api/v1/sources", SOURCE, "collide")

    assert response.status_code == 201, response.content
    assert response.json()["id"] != first.json()["id"]
    assert not response.has_header("Idempotent-Replayed")


def test_a_refused_request_is_remembered_too(world):
    """The retry of a 422 is the same 422: the key names one request, whatever it got."""
    agent = world.client("agent")
    invalid = {"kind": "rumour", "content": "x"}
    first = _post(agent, "/api/v1/sources", invalid, "bad-1")

    again = _post(agent, "/api/v1/sources", invalid, "bad-1")

    assert_problem(first, 422, "kind")
    assert again.status_code == 422
    assert again["Content-Type"] == "application/problem+json"
    assert again.json() == first.json()


def test_a_retry_while_the_first_is_still_running_is_a_409(world):
    agent = world.client("agent")
    _post(agent, "/api/v1/sources", SOURCE, "slow-1")
    IdempotencyRecord.objects.filter(key="slow-1").update(response_status=0)  # as if running
    given = Written.now()

    response = _post(agent, "/api/v1/sources", SOURCE, "slow-1")

    assert_problem(response, 409)
    assert Written.now() == given


def test_a_key_older_than_a_day_may_be_used_again(world):
    agent = world.client("agent")
    first = _post(agent, "/api/v1/sources", SOURCE, "old-1")
    IdempotencyRecord.objects.filter(key="old-1").update(
        created_at=timezone.now() - timedelta(hours=25)
    )

    again = _post(agent, "/api/v1/sources", SOURCE, "old-1")

    assert again.status_code == 201
    assert again.json()["id"] != first.json()["id"]


@pytest.mark.parametrize("key", ["", "   ", "k" * 201])
def test_an_empty_or_overlong_key_is_a_422(world, key: str):
    given = Written.now()

    response = _post(world.client("agent"), "/api/v1/sources", SOURCE, key)

    assert_problem(response, 422, "Idempotency-Key")
    assert Written.now() == given


def test_a_key_of_200_characters_is_accepted(world):
    response = _post(world.client("agent"), "/api/v1/sources", SOURCE, "k" * 200)

    assert response.status_code == 201


def test_a_retry_while_the_first_request_still_runs_is_told_to_retry_shortly(world):
    """The first request has claimed the key and not answered yet (a client retried after a
    dropped connection): 409 with its own problem type and a Retry-After, so a client can
    tell it from an illegal transition, which no retry fixes."""
    agent = world.client("agent")
    first = _post(agent, "/api/v1/sources", SOURCE, "slow-1")
    IdempotencyRecord.objects.filter(key="slow-1").update(response_status=0)  # still running
    given = Written.now()

    again = _post(agent, "/api/v1/sources", SOURCE, "slow-1")

    assert first.status_code == 201
    assert again.status_code == 409
    assert again["Retry-After"] == "1"
    assert again.json()["type"] == "https://memgov.dev/problems/idempotency-key-in-use"
    assert again.json()["detail"] == "A request with this Idempotency-Key is still being processed."
    assert Written.now() == given
