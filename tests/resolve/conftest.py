"""Builders for the resolve stories: memory is proposed through the services and activated
through the real workflow (reviewer approvals, then the gate checks that Celery runs
eagerly from ``on_commit``), so every fact the resolver serves passed its checks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from rest_framework.test import APIClient

from approvals.services import version_approve
from core.principals import Principal
from memory import entities, proposals, sources
from memory.models import MemoryItem, MemoryVersion, Status
from tests.conftest import World

# Who must approve each kind in the `world` tenant (rules need two distinct reviewers).
REVIEWERS = {"preference": (), "task_fact": ("rita",), "enterprise_rule": ("rita", "lena")}
EVIDENCE = {
    "preference": "message",
    "task_fact": "business_record",
    "enterprise_rule": "approval_record",
}


@dataclass
class Story:
    world: World
    on_commit: Callable[..., AbstractContextManager[Any]]

    def principal(self, name: str = "agent", labels: tuple[str, ...] = ()) -> Principal:
        base = self.world.principal(name)
        if not labels:
            return base
        return Principal(tenant=base.tenant, name=base.name, labels=frozenset(labels))

    def entity(self, name: str, kind: str = "person") -> str:
        return entities.entity_create(principal=self.principal(), kind=kind, name=name).pk

    def source(
        self,
        content: str,
        kind: str = "message",
        *,
        visibility: list[str] | None = None,
        by: Principal | None = None,
        **extra: Any,
    ) -> str:
        data = {"kind": kind, "content": content, "visibility": visibility or ["*"], **extra}
        return sources.source_record(principal=by or self.principal(), data=data).pk

    def propose(
        self,
        *,
        kind: str,
        subject: str,
        field: str,
        value: Any,
        scope: dict[str, str],
        expires_at: datetime | None,
        sources: list[str] | None = None,
        by: Principal | None = None,
        **extra: Any,
    ) -> MemoryVersion:
        """Version 1 of a new item; on-commit work (preview or gate checks) runs at once."""
        if sources is None:
            sources = [self.source(f"evidence for {field}", EVIDENCE[kind], by=by)]
        data = {
            "kind": kind,
            "subject": subject,
            "field": field,
            "value": value,
            "statement": extra.pop("statement", f"{field} is {value!r}"),
            "scope": scope,
            "owner": extra.pop("owner", "rita"),
            "expires_at": expires_at,
            "sources": sources,
            **extra,
        }
        with self.on_commit(execute=True):
            version = proposals.memory_propose(principal=by or self.principal(), data=data)
        version.refresh_from_db()
        return version

    def approve(self, version: MemoryVersion, *reviewers: str) -> MemoryVersion:
        item = MemoryItem.objects.get(pk=version.item_id)
        for reviewer in reviewers:
            with self.on_commit(execute=True):
                version_approve(principal=self.world.principal(reviewer), item=item, comment="ok")
        version.refresh_from_db()
        return version

    def activate(self, **proposal: Any) -> MemoryVersion:
        """Propose, approve as the kind requires, and insist the gate activated it."""
        version = self.propose(**proposal)
        version = self.approve(version, *REVIEWERS[proposal["kind"]])
        assert version.status == Status.ACTIVE, (version.status, version.status_reason)
        return version


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    """The personas' passwords are hashed with PBKDF2 otherwise: two seconds per test of
    setup that says nothing about resolving."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def story(world: World, django_capture_on_commit_callbacks: Any) -> Iterator[Story]:
    yield Story(world=world, on_commit=django_capture_on_commit_callbacks)


def resolve(client: APIClient, **body: Any) -> Any:
    """POST /resolve and insist on a 200 (the tests below assert the body exactly)."""
    response = client.post("/api/v1/resolve", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def winners(body: dict[str, Any]) -> dict[str, Any]:
    """field → value of every fact in a resolve answer."""
    return {fact["field"]: fact["value"] for fact in body["facts"]}


def outcomes(body: dict[str, Any]) -> dict[str, str]:
    """memory_id → outcome of the explain listing."""
    return {row["memory_id"]: row["outcome"] for row in body["considered"]}


# The customer of seed 002 and her durable home-delivery preference, shared by the stories.
@pytest.fixture
def dana(story: Story) -> str:
    return story.entity("Dana Kim", "customer")


@pytest.fixture
def home(story: Story, dana: str) -> MemoryVersion:
    return story.activate(
        kind="preference",
        subject=dana,
        field="delivery_address",
        value="12 Elm Street",
        scope={},
        expires_at=None,
    )


@pytest.fixture
def refund_account(story: Story, dana: str) -> MemoryVersion:
    """Dana's refund account, from a source only the finance label may see."""
    finance = story.principal("agent", labels=("staff", "finance"))
    slip = story.source("Refunds go to IBAN DE89 3704.", visibility=["finance"], by=finance)
    return story.activate(
        kind="preference",
        subject=dana,
        field="refund_account",
        value="DE89 3704",
        scope={},
        expires_at=None,
        sources=[slip],
        by=finance,
    )
