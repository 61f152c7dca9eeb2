"""Seed 000: valid time (when it held in the world) is not system time (when Memgov knew
it), and a plan is never the current state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory.models import MemoryVersion
from tests.conftest import iso
from tests.resolve.conftest import Story, resolve, winners

MARCH = datetime(2025, 3, 1, tzinfo=UTC)
FEBRUARY = datetime(2025, 2, 15, 12, tzinfo=UTC)
APRIL = datetime(2025, 4, 15, 12, tzinfo=UTC)
JUNE = datetime(2025, 6, 10, 9, 30, tzinfo=UTC)


@pytest.fixture
def priya(story: Story) -> str:
    return story.entity("Priya Nair", "customer")


@pytest.fixture
def mumbai(story: Story, priya: str) -> MemoryVersion:
    """Known first, with no start date: nobody said when she moved to Mumbai."""
    return story.activate(
        kind="preference",
        subject=priya,
        field="home_city",
        value="Mumbai",
        scope={},
        expires_at=None,
    )


@pytest.fixture
def pune(story: Story, priya: str, mumbai: MemoryVersion) -> MemoryVersion:
    said = story.source("I moved to Pune in March.", speaker="Priya", occurred_at=JUNE)
    return story.activate(
        kind="preference",
        subject=priya,
        field="home_city",
        value="Pune",
        statement="Priya moved to Pune in March (said in June).",
        scope={},
        expires_at=None,
        valid_from=MARCH,
        sources=[said],
    )


def test_before_the_move_she_lived_in_mumbai(world, priya, mumbai, pune):
    body = resolve(world.client("agent"), subject=priya, valid_at=iso(FEBRUARY))

    assert winners(body) == {"home_city": "Mumbai"}
    assert body["facts"][0]["qualifiers"] == ["valid_from_unknown"]
    assert body["facts"][0]["reason"] == "only applicable fact"
    assert body["valid_at"] == iso(FEBRUARY)


def test_after_the_move_she_lives_in_pune(world, priya, mumbai, pune):
    body = resolve(world.client("agent"), subject=priya, valid_at=iso(APRIL))

    assert winners(body) == {"home_city": "Pune"}
    assert body["facts"][0]["valid_from"] == iso(MARCH)
    assert body["facts"][0]["qualifiers"] == []
    assert body["facts"][0]["reason"] == (
        f"later valid_from than {mumbai.item_id} (2025-03-01T00:00:00+00:00 after unknown start)"
    )


def test_now_she_lives_in_pune(world, priya, mumbai, pune):
    body = resolve(world.client("agent"), subject=priya)

    assert winners(body) == {"home_city": "Pune"}


def test_before_the_move_was_learned_memgov_would_have_said_mumbai(world, priya, mumbai, pune):
    assert pune.activated_at is not None
    learned = pune.activated_at
    client = world.client("agent")

    then_now = resolve(client, subject=priya, known_at=iso(learned - timedelta(microseconds=1)))
    then_april = resolve(client, subject=priya, valid_at=iso(APRIL), known_at=iso(learned))
    then_april_before = resolve(
        client,
        subject=priya,
        valid_at=iso(APRIL),
        known_at=iso(learned - timedelta(microseconds=1)),
    )

    assert winners(then_now) == {"home_city": "Mumbai"}
    assert winners(then_april) == {"home_city": "Pune"}
    assert winners(then_april_before) == {"home_city": "Mumbai"}


def test_before_anything_was_known_the_field_is_not_answered(world, priya, mumbai, pune):
    assert mumbai.activated_at is not None
    before = iso(mumbai.activated_at - timedelta(seconds=1))

    body = resolve(world.client("agent"), subject=priya, fields=["home_city"], known_at=before)

    assert body["facts"] == []
    assert body["abstentions"] == [
        {
            "field": "home_city",
            "reason": "no_applicable_fact",
            "detail": "no memory for home_city applies to this context",
        }
    ]


def test_a_time_before_a_known_start_abstains_as_not_valid_at_time(world, story, priya):
    story.activate(
        kind="preference",
        subject=priya,
        field="employer",
        value="Acme",
        scope={},
        expires_at=None,
        valid_from=MARCH,
    )

    body = resolve(world.client("agent"), subject=priya, valid_at=iso(FEBRUARY))

    assert body["facts"] == []
    assert body["abstentions"] == [
        {
            "field": "employer",
            "reason": "not_valid_at_time",
            "detail": f"memory for employer applies to this context but is not valid at "
            f"{FEBRUARY.isoformat()}",
        }
    ]


@pytest.fixture
def nova_plan(story: Story, priya: str) -> MemoryVersion:
    said = story.source("I'm joining Nova next month.", speaker="Priya")
    return story.activate(
        kind="preference",
        subject=priya,
        field="employer",
        value="Nova",
        statement="Priya is joining Nova next month.",
        scope={},
        expires_at=None,
        assertion="plan",
        sources=[said],
    )


def test_a_plan_is_listed_as_a_plan_and_the_field_abstains(world, priya, nova_plan):
    body = resolve(world.client("agent"), subject=priya, fields=["employer"])

    assert body["facts"] == []
    assert body["plans"] == [
        {
            "field": "employer",
            "value": "Nova",
            "memory_id": nova_plan.item_id,
            "version": 1,
            "valid_from": None,
            "statement": "Priya is joining Nova next month.",
        }
    ]
    assert body["abstentions"] == [
        {
            "field": "employer",
            "reason": "no_applicable_fact",
            "detail": "only plans exist for employer; a plan is never the current state",
        }
    ]


def test_a_plan_never_becomes_the_state_even_months_later(world, story, priya, nova_plan):
    acme = story.activate(
        kind="preference",
        subject=priya,
        field="employer",
        value="Acme",
        scope={},
        expires_at=None,
    )
    months_later = iso(datetime.now(UTC) + timedelta(days=120))

    body = resolve(world.client("agent"), subject=priya, valid_at=months_later, explain=True)

    assert winners(body) == {"employer": "Acme"}
    assert body["facts"][0]["memory_id"] == acme.item_id
    assert [p["memory_id"] for p in body["plans"]] == [nova_plan.item_id]
    assert {row["memory_id"]: row["outcome"] for row in body["considered"]} == {
        acme.item_id: "selected",
        nova_plan.item_id: "selected",
    }
