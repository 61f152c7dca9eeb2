"""Issue 11, point 9: an Idempotency-Key belongs to the principal that sent it. Two callers
of one tenant using the same key each get their own first answer, and neither learns that
the other used it."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework.test import APIClient

from accounts import tenancy
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
    assert IdempotencyRecord.objects.filter(key="k-3").count() == 2


def _agent_key(world, labels: list[str]) -> APIClient:
    _, raw = tenancy.api_key_create(tenant=world.tenant, agent_name="bot", labels=labels)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_a_key_without_labels_never_replays_the_answer_of_a_finance_key_of_the_same_agent(
    world,
):
    finance, unlabelled = _agent_key(world, ["finance"]), _agent_key(world, [])
    secret = {
        "kind": "business_record",
        "content": "Order ORD-7: Dana Kim pays by card 4111.",
        "visibility": ["finance"],
    }
    first = finance.post("/api/v1/sources", secret, "json", HTTP_IDEMPOTENCY_KEY="k-4")

    again = unlabelled.post("/api/v1/sources", secret, "json", HTTP_IDEMPOTENCY_KEY="k-4")

    assert first.status_code == 201, first.content
    assert not again.has_header("Idempotent-Replayed")
    assert again.json()["id"] != first.json()["id"]
    assert IdempotencyRecord.objects.filter(key="k-4").count() == 2


def test_a_retry_takes_over_a_claim_whose_request_died_once_its_lease_ran_out(world):
    agent = world.client("agent")
    first = agent.post("/api/v1/sources", SOURCE, "json", HTTP_IDEMPOTENCY_KEY="k-5")
    record = IdempotencyRecord.objects.get(key="k-5")
    # The process that ran the first request died before it answered: the claim stays.
    IdempotencyRecord.objects.filter(pk=record.pk).update(
        response_status=0, response_body={}, created_at=timezone.now() - timedelta(minutes=3)
    )

    retry = agent.post("/api/v1/sources", SOURCE, "json", HTTP_IDEMPOTENCY_KEY="k-5")

    assert first.status_code == retry.status_code == 201, retry.content
    assert not retry.has_header("Idempotent-Replayed")
    assert (
        agent.post("/api/v1/sources", SOURCE, "json", HTTP_IDEMPOTENCY_KEY="k-5").json()
        == retry.json()
    )


def test_a_retry_while_the_first_request_still_runs_is_told_to_wait(world):
    agent = world.client("agent")
    agent.post("/api/v1/sources", SOURCE, "json", HTTP_IDEMPOTENCY_KEY="k-6")
    IdempotencyRecord.objects.filter(key="k-6").update(
        response_status=0, response_body={}, created_at=timezone.now() - timedelta(seconds=5)
    )

    retry = agent.post("/api/v1/sources", SOURCE, "json", HTTP_IDEMPOTENCY_KEY="k-6")

    assert retry.status_code == 409
    assert retry.json()["type"].endswith("idempotency-key-in-use")
    assert retry["Retry-After"] == "1"
