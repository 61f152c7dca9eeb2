"""Builders for the review-and-activation stories: everything goes through the public API
with a persona's key, and every call runs its on-commit work (Celery tasks, eager in
tests; the cache bump) as a real commit would, before the next call.

The stories are seed 001's: renewals of project P-9 with supplier S-17 may follow the
approved exception APR-2291; nothing an agent proposes is used before an authorized
reviewer confirmed it and the scenario checks passed."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User

from accounts import tenancy
from accounts.grants import permission_grant
from memory.models import MemoryVersion
from tests.conftest import World, iso, later

API = "/api/v1"
EVIDENCE = {
    "preference": "message",
    "task_fact": "business_record",
    "enterprise_rule": "approval_record",
}
EXCEPTION = "follow exception APR-2291"


def person(world: World, name: str, *grants: str) -> User:
    """Another user of the tenant with a personal key (``world.client(name)`` works)."""
    user = tenancy.user_create(
        tenant=world.tenant,
        username=name,
        password=None,
        email=f"{name}@example.com",
        labels=["staff"],
    )
    for grant in grants:
        perm, _, target = grant.partition("@")
        dim, _, value = target.partition("=")
        permission_grant(
            user=user,
            tenant=world.tenant,
            codename=perm,
            dimension=dim or None,
            value=value or None,
        )
    world.users[name] = user
    world.keys[name] = tenancy.api_key_create(tenant=world.tenant, user=user, labels=["staff"])[1]
    return user


@dataclass
class Flow:
    world: World
    on_commit: Callable[..., AbstractContextManager[Any]] | None = None
    subjects: dict[str, str] = field(default_factory=dict)

    # --- raw calls -----------------------------------------------------------------------

    def _committed(self) -> AbstractContextManager[Any]:
        """Run what a commit would trigger before returning (in TestCase-style tests the
        transaction never commits; with transaction=True there is nothing to capture)."""
        return self.on_commit(execute=True) if self.on_commit else nullcontext()

    def post(self, who: str, path: str, body: Any = None, **headers: Any) -> Any:
        with self._committed():
            response: Any = self.world.client(who).post(
                f"{API}{path}", body if body is not None else {}, format="json", **headers
            )
        return response

    def uncommitted(self, who: str, path: str, body: Any = None) -> Any:
        """A call whose on-commit work (the Celery hand-over) has not run yet."""
        response: Any = self.world.client(who).post(
            f"{API}{path}", body if body is not None else {}, format="json"
        )
        return response

    def get(self, who: str, path: str) -> Any:
        response: Any = self.world.client(who).get(f"{API}{path}")
        return response

    def ok(self, response: Any, status: int = 200) -> Any:
        assert response.status_code == status, response.content
        return response.json()

    # --- builders ------------------------------------------------------------------------

    def subject(self, name: str = "Renewal purchasing", kind: str = "process") -> str:
        if name not in self.subjects:
            body = {"kind": kind, "name": name}
            self.subjects[name] = self.ok(self.post("agent", "/entities", body), 201)["id"]
        return self.subjects[name]

    def source(self, kind: str = "approval_record", who: str = "agent", **extra: Any) -> str:
        body = {
            "kind": kind,
            "content": extra.pop("content", f"{kind}: APR-2291 v3 approves the exception."),
            **extra,
        }
        return str(self.ok(self.post(who, "/sources", body), 201)["id"])

    def body(self, kind: str, scope: dict[str, str], **overrides: Any) -> dict[str, Any]:
        """A valid proposal of ``kind`` about the renewal process (seed 001)."""
        body: dict[str, Any] = {
            "kind": kind,
            "subject": self.subject(),
            "field": "material_checks",
            "value": EXCEPTION,
            "statement": "Renewals follow exception APR-2291.",
            "scope": scope,
            "owner": "rita",
            "expires_at": iso(later(90)) if kind != "preference" else None,
            "basis": {"ref": "APR-2291", "version": "3"},
        }
        body.update(overrides)
        if "sources" not in body:
            body["sources"] = [self.source(EVIDENCE[kind])]
        return body

    def propose(
        self, kind: str, scope: dict[str, str], who: str = "agent", **overrides: Any
    ) -> Any:
        return self.ok(self.post(who, "/memories", self.body(kind, scope, **overrides)), 201)

    def rule(self, scope: dict[str, str] | None = None, **overrides: Any) -> Any:
        return self.propose("enterprise_rule", scope or {"project": "P-9"}, **overrides)

    def approve(self, memory_id: str, *reviewers: str) -> Any:
        memory = None
        for reviewer in reviewers:
            body = {"comment": f"{reviewer} checked APR-2291"}
            memory = self.ok(self.post(reviewer, f"/memories/{memory_id}/approve", body))
        return memory

    def active_rule(self, scope: dict[str, str] | None = None, **overrides: Any) -> Any:
        """A rule approved by rita and lena whose gate checks passed."""
        memory_id = self.rule(scope, **overrides)["id"]
        self.approve(memory_id, "rita", "lena")
        memory = self.memory(memory_id)
        assert memory["status"] == "active", memory
        return memory

    def correct(self, memory_id: str, if_match: int, **changes: Any) -> Any:
        path = f"/memories/{memory_id}/versions"
        return self.ok(self.post("agent", path, changes, HTTP_IF_MATCH=f'"{if_match}"'), 201)

    def memory(self, memory_id: str, who: str = "rita") -> Any:
        return self.ok(self.get(who, f"/memories/{memory_id}"))

    def retire(self, memory_id: str, who: str = "rita", **extra: Any) -> Any:
        body = {"reason": "APR-2291 was withdrawn", **extra}
        return self.post(who, f"/memories/{memory_id}/retire", body)

    def resolve(self, context: dict[str, str], who: str = "agent", **extra: Any) -> Any:
        body = {"subject": self.subject(), "context": context, **extra}
        return self.ok(self.post(who, "/resolve", body))

    def resolved_ids(self, context: dict[str, str], **extra: Any) -> list[str]:
        return [fact["memory_id"] for fact in self.resolve(context, **extra)["facts"]]


def head(memory_id: str) -> MemoryVersion:
    from memory.models import MemoryItem

    item = MemoryItem.objects.get(pk=memory_id)
    return MemoryVersion.objects.get(item=item, number=item.head_version)


def moment(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00"))
