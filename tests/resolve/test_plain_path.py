"""Resolve's hot path (``api.resolve.plain_call``, issue 14) answers the request agents
send on every call without DRF's machinery; any other request goes the full way. Either
way the caller gets the same answer, headers and errors."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.views import APIView

from api import resolve as resolve_api
from api.base import MemgovAPIView
from core.models import ApiKey
from memory import keys
from memory.models import MemoryVersion
from tests.conftest import needs
from tests.resolve.conftest import Story

PATH = "/api/v1/resolve"


@pytest.fixture
def taken(monkeypatch) -> list[bool]:
    """One entry per resolve request: whether the hot path answered it (DRF's full
    path, ``MemgovAPIView.dispatch``, was not called)."""
    seen: list[bool] = []
    hot, full = resolve_api.ResolveView.dispatch, APIView.dispatch

    def hot_first(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(True)
        return hot(self, request, *args, **kwargs)

    def full_after(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        seen[-1] = False
        return full(self, request, *args, **kwargs)

    monkeypatch.setattr(resolve_api.ResolveView, "dispatch", hot_first)
    monkeypatch.setattr(MemgovAPIView, "dispatch", full_after, raising=False)
    return seen


def _comparable(response: Any) -> tuple[int, dict[str, Any], str, str]:
    body = response.json()
    body.pop("valid_at", None), body.pop("known_at", None)  # each answer is stamped "now"
    return response.status_code, body, response["Content-Type"], response["Allow"]


def test_the_usual_request_takes_the_hot_path_and_gets_the_full_paths_answer(
    world, dana: str, home: MemoryVersion, taken: list[bool]
):
    client = world.client("agent")
    request = {"subject": dana, "context": {"task": "order-a"}, "explain": True}

    hot = client.post(PATH, request, format="json")
    full = client.post(PATH, request, format="json", HTTP_ACCEPT="application/json, */*")

    assert taken == [True, False]
    assert hot.status_code == 200
    assert _comparable(hot) == _comparable(full)
    assert hot.json()["facts"][0]["value"] == "12 Elm Street"


@pytest.mark.parametrize(
    ("extra", "status"),
    [
        ({"HTTP_IDEMPOTENCY_KEY": "resolve-1"}, 200),
        ({"HTTP_ACCEPT": "application/*"}, 200),
        ({"content_type": "application/json; charset=latin-1"}, 400),
    ],
    ids=["idempotency-key", "accept-a-family", "latin-1"],
)
def test_requests_the_hot_path_does_not_know_go_the_full_way(world, dana, taken, extra, status):
    client = world.client("agent")
    options = {"content_type": "application/json", **extra}

    response = client.post(PATH, f'{{"subject": "{dana}"}}', **options)

    assert taken == [False]
    assert response.status_code == status, response.content


def test_a_missing_subject_is_the_services_404_answered_through_drfs_handler(
    world, taken: list[bool]
):
    missing = world.client("agent").post(PATH, {"subject": "ent_nobody"}, format="json")

    assert missing.status_code == 404
    assert missing["Content-Type"] == "application/problem+json"
    assert missing.json()["status"] == 404
    assert taken == [True]


def test_a_revoked_key_is_refused_with_the_full_paths_401(world, dana, taken: list[bool]):
    ApiKey.objects.filter(tenant=world.tenant, principal=ApiKey.Principal.AGENT).update(
        revoked_at=timezone.now()
    )

    response = world.client("agent").post(PATH, {"subject": dana}, format="json")

    assert response.status_code == 401
    assert response["Content-Type"] == "application/problem+json"
    assert response["WWW-Authenticate"] == "Bearer"
    assert taken == [False]


def test_a_dashboard_session_goes_the_full_way(world, dana, home, taken: list[bool]):
    client = Client()
    client.force_login(world.users["rita"])

    response = client.post(PATH, {"subject": dana}, content_type="application/json")

    assert response.status_code == 200
    assert response.json()["facts"][0]["value"] == "12 Elm Street"
    assert taken == [False]


class TestWithTheCacheOff:
    """Without the cache, a remembered agent key is checked by the candidate statement
    itself (``keys.KeyCheck``): one query a resolve, and the key's state read by it."""

    pytestmark = [needs("postgres")]

    @pytest.fixture(autouse=True)
    def _cache_off(self, settings):
        settings.MEMGOV_RESOLVE_CACHE = False
        keys._remembered.clear()

    def test_a_cold_resolve_with_a_remembered_key_is_one_query(
        self, world, dana, home, taken, django_assert_num_queries
    ):
        client = world.client("agent")
        client.post(PATH, {"subject": dana}, format="json")  # the key is remembered

        with django_assert_num_queries(1):
            response = client.post(PATH, {"subject": dana}, format="json")

        assert response.json()["facts"][0]["value"] == "12 Elm Street"
        assert taken == [True, True]

    @pytest.mark.parametrize("subject_has_memories", [True, False], ids=["facts", "no-facts"])
    def test_a_key_revoked_behind_the_services_back_is_refused_before_any_answer(
        self, world, story: Story, taken, subject_has_memories, request
    ):
        if subject_has_memories:
            subject = request.getfixturevalue("dana")
            request.getfixturevalue("home")
        else:
            subject = story.entity("Erin Stone", "customer")
        client = world.client("agent")
        assert client.post(PATH, {"subject": subject}, format="json").status_code == 200
        ApiKey.objects.filter(tenant=world.tenant, principal=ApiKey.Principal.AGENT).update(
            revoked_at=timezone.now()
        )

        refused = client.post(PATH, {"subject": subject}, format="json")

        assert refused.status_code == 401
        assert refused["Content-Type"] == "application/problem+json"
        assert taken == [True, False]
        assert keys._remembered == {}

    def test_labels_changed_behind_the_services_back_decide_the_next_answer(
        self, world, dana, refund_account, taken
    ):
        agent = ApiKey.objects.filter(tenant=world.tenant, principal=ApiKey.Principal.AGENT)
        agent.update(labels=["staff", "finance"])
        client = world.client("agent")
        before = client.post(PATH, {"subject": dana}, format="json").json()

        agent.update(labels=["staff"])
        after = client.post(PATH, {"subject": dana}, format="json").json()

        assert [f["value"] for f in before["facts"]] == ["DE89 3704"]
        assert after["facts"] == []
        assert taken == [True, True]
