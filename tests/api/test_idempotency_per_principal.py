"""Issue 11, point 9: an Idempotency-Key belongs to the principal that sent it. Two callers
of one tenant using the same key each get their own first answer, and neither learns that
the other used it."""

from __future__ import annotations

from core.models import IdempotencyRecord
from memory.models import Source

SOURCE = {"kind": "message", "content": "Deliver to 12 Elm Street."}


def test_two_principals_with_the_same_key_each_get_their_own_first_answer(world):
    agent, rita = world.client("agent"), world.client("rita")

    first = agent.post("/api/v1/sources", SOURCE, "json", HTTP_IDEMPOTENCY_KEY="k-1")
    other = rita.post("/api/v1/sources", SOURCE, "json", HTTP_IDEMPOTENCY_KEY="k-1")

    assert first.status_code == other.status_code == 201
    assert first.json()["id"] != other.json()["id"]
    assert not other.has_header("Idempotent-Replayed")
    assert Source.objects.filter(pk__in=[first.json()["id"], other.json()["id"]]).count() == 2


def test_each_principal_still_gets_its_own_replay(world):
    agent, rita = world.client("agent"), world.client("rita")
    first = agent.post("/api/v1/sources", SOURCE, "json", HTTP_IDEMPOTENCY_KEY="k-2")
    other = rita.post("/api/v1/sources", SOURCE, "json", HTTP_IDEMPOTENCY_KEY="k-2")

    again = agent.post("/api/v1/sources", SOURCE, "json", HTTP_IDEMPOTENCY_KEY="k-2")
    rita_again = rita.post("/api/v1/sources", SOURCE, "json", HTTP_IDEMPOTENCY_KEY="k-2")

    assert again.json() == first.json()
    assert rita_again.json() == other.json()
    assert again["Idempotent-Replayed"] == rita_again["Idempotent-Replayed"] == "true"


def test_another_principal_with_a_different_body_is_not_told_the_key_was_used(world):
    world.client("agent").post("/api/v1/sources", SOURCE, "json", HTTP_IDEMPOTENCY_KEY="k-3")

    response = world.client("rita").post(
        "/api/v1/sources",
        {"kind": "message", "content": "Something else."},
        "json",
        HTTP_IDEMPOTENCY_KEY="k-3",
    )

    assert response.status_code == 201, response.content
    assert sorted(
        IdempotencyRecord.objects.filter(key="k-3").values_list("principal", flat=True)
    ) == [
        "agent:bot",
        "user:rita",
    ]
