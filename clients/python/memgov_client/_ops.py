"""One builder per API operation: method, path, body and how to read the answer.

Both clients (sync and async) send these, so a path or a body is written once and the
two clients cannot drift apart; they differ only in how they wait."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar
from urllib.parse import parse_qs, quote, urlsplit

import httpx

from memgov_client import types as t

T = TypeVar("T")
API = "/api/v1/"


def _json(response: httpx.Response) -> Any:
    return response.json()


def _nothing(response: httpx.Response) -> None:
    return None


@dataclass(frozen=True)
class Op(Generic[T]):
    """A request to send and the reader of its successful answer."""

    method: str
    path: str
    read: Callable[[httpx.Response], T]
    body: Any = None
    params: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    # Answers whose status is part of the result rather than a problem (``/readyz`` 503).
    accept: frozenset[int] = frozenset()

    def content(self) -> bytes | None:
        if self.body is None and self.method != "POST":
            return None
        return json.dumps({} if self.body is None else self.body, default=_encode).encode()


def _encode(value: object) -> str:
    """Aware datetimes go out as RFC 3339 UTC with ``Z``; a naive one is sent as written
    and the server refuses it (422), as the contract says it must."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value.isoformat().replace("+00:00", "Z")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _seg(value: str | int) -> str:
    """An id as one path segment: an id holding ``/`` or ``..`` cannot reach another URL."""
    return quote(str(value), safe="")


def _op(
    method: str,
    path: str,
    body: Any = None,
    read: Callable[[httpx.Response], Any] = _json,
    **kwargs: Any,
) -> Op[Any]:
    return Op(method, API + path, read, body, **kwargs)


def _clean(body: Mapping[str, Any]) -> dict[str, Any]:
    return dict(body)


def cursor_of(next_url: str | None) -> str | None:
    """The cursor inside a page's ``next`` link. Only the cursor is reused: the link's host
    is what the server saw, which behind a proxy may not be the address the client uses."""
    if not next_url:
        return None
    values = parse_qs(urlsplit(next_url).query).get("cursor")
    return values[0] if values else None


def _page_params(limit: int | None, cursor: str | None, **filters: str | None) -> dict[str, str]:
    params = {name: value for name, value in filters.items() if value is not None}
    if limit is not None:
        params["limit"] = str(limit)
    if cursor:
        params["cursor"] = cursor
    return params


# --- Sources ---------------------------------------------------------------------------


def record_source(source: t.SourceInput) -> Op[t.Source]:
    return _op("POST", "sources", _clean(source))


def get_source(source_id: str) -> Op[t.Source]:
    return _op("GET", f"sources/{_seg(source_id)}")


def revoke_source(source_id: str, reason: str) -> Op[t.SourceRevocation]:
    return _op("POST", f"sources/{_seg(source_id)}/revoke", {"reason": reason})


def set_source_visibility(source_id: str, visibility: list[str], reason: str) -> Op[t.Source]:
    body = {"visibility": visibility, "reason": reason}
    return _op("POST", f"sources/{_seg(source_id)}/visibility", body)


# --- Entities --------------------------------------------------------------------------


def create_entity(
    kind: str, name: str, aliases: list[str] | None, external_ref: str | None
) -> Op[t.Entity]:
    body: dict[str, Any] = {"kind": kind, "name": name, "aliases": aliases or []}
    if external_ref is not None:
        body["external_ref"] = external_ref
    return _op("POST", "entities", body)


def get_entity(entity_id: str) -> Op[t.Entity]:
    return _op("GET", f"entities/{_seg(entity_id)}")


def add_alias(entity_id: str, alias: str, source: str | None) -> Op[t.Entity]:
    body = {"alias": alias} if source is None else {"alias": alias, "source": source}
    return _op("POST", f"entities/{_seg(entity_id)}/aliases", body)


def match_entity(name: str, kind: str | None) -> Op[t.EntityMatch]:
    body = {"name": name} if kind is None else {"name": name, "kind": kind}
    return _op("POST", "entities/match", body)


def list_entities(q: str | None, limit: int | None, cursor: str | None) -> Op[t.Page[t.Entity]]:
    return _op("GET", "entities", params=_page_params(limit, cursor, q=q))


def entity_kinds() -> Op[t.EntityKinds]:
    return _op("GET", "entities/kinds")


def match_external_ref(external_ref: str, kind: str | None) -> Op[t.ExternalRefMatch]:
    params = {"external_ref": external_ref, **({"kind": kind} if kind is not None else {})}
    return _op("GET", "entities/by-ref", params=params)


def list_entity_facts(
    entity_id: str, limit: int | None, cursor: str | None
) -> Op[t.Page[t.EntityFact]]:
    params = _page_params(limit, cursor)
    return _op("GET", f"entities/{_seg(entity_id)}/facts", params=params)


def export_entity(entity_id: str) -> Op[t.ExportDocument]:
    return _op("GET", f"entities/{_seg(entity_id)}/export")


def erase_entity(entity_id: str, reason: str) -> Op[t.ErasureStarted]:
    return _op("POST", f"entities/{_seg(entity_id)}/erase", {"reason": reason})


def get_erasure(erasure_id: str) -> Op[t.Erasure]:
    return _op("GET", f"erasures/{_seg(erasure_id)}")


# --- Memories --------------------------------------------------------------------------


def propose_memory(proposal: t.Proposal) -> Op[t.Memory]:
    return _op("POST", "memories", _clean(proposal))


def list_memories(
    *,
    subject: str | None,
    field: str | None,
    kind: str | None,
    status: str | None,
    owner: str | None,
    scope: Mapping[str, str] | None,
    limit: int | None,
    cursor: str | None,
) -> Op[t.Page[t.Memory]]:
    params = _page_params(
        limit, cursor, subject=subject, field=field, kind=kind, status=status, owner=owner
    )
    params.update({f"scope.{dim}": value for dim, value in (scope or {}).items()})
    return _op("GET", "memories", params=params)


def get_memory(memory_id: str) -> Op[t.Memory]:
    return _op("GET", f"memories/{_seg(memory_id)}")


def list_versions(memory_id: str) -> Op[list[t.Memory]]:
    return _op("GET", f"memories/{_seg(memory_id)}/versions")


def get_version(memory_id: str, number: int) -> Op[t.Memory]:
    return _op("GET", f"memories/{_seg(memory_id)}/versions/{_seg(number)}")


def correct_memory(memory_id: str, read_version: int, changes: t.Correction) -> Op[t.Memory]:
    """``If-Match`` carries the version the caller read: a change made since is a 409."""
    headers = {"If-Match": f'"{int(read_version)}"'}
    return _op("POST", f"memories/{_seg(memory_id)}/versions", _clean(changes), headers=headers)


def approve(memory_id: str, comment: str) -> Op[t.Memory]:
    return _op("POST", f"memories/{_seg(memory_id)}/approve", {"comment": comment})


def reject(memory_id: str, reason: str) -> Op[t.Memory]:
    return _op("POST", f"memories/{_seg(memory_id)}/reject", {"reason": reason})


def retire(memory_id: str, reason: str, in_flight: t.InFlight) -> Op[t.Retirement]:
    body = {"reason": reason, "in_flight": in_flight}
    return _op("POST", f"memories/{_seg(memory_id)}/retire", body)


def recheck(memory_id: str) -> Op[t.Memory]:
    return _op("POST", f"memories/{_seg(memory_id)}/recheck")


def add_scenario(memory_id: str, scenario: t.Scenario) -> Op[t.AddedScenario]:
    return _op("POST", f"memories/{_seg(memory_id)}/scenarios", _clean(scenario))


def list_scenarios(memory_id: str) -> Op[t.ScenarioList]:
    return _op("GET", f"memories/{_seg(memory_id)}/scenarios")


def remove_scenario(memory_id: str, scenario_id: int, reason: str) -> Op[t.AddedScenario]:
    path = f"memories/{_seg(memory_id)}/scenarios/{int(scenario_id)}/remove"
    return _op("POST", path, {"reason": reason})


def list_checks(memory_id: str) -> Op[list[t.CheckResult]]:
    return _op("GET", f"memories/{_seg(memory_id)}/checks")


def link_subject(memory_id: str, subject: str) -> Op[t.Memory]:
    return _op("POST", f"memories/{_seg(memory_id)}/link-subject", {"subject": subject})


def clarify(memory_id: str, choice: str, member: str | None) -> Op[t.Memory]:
    body = {"choice": choice, **({"member": member} if member else {})}
    return _op("POST", f"memories/{_seg(memory_id)}/clarify", body)


def list_my_proposals(
    status: str | None, limit: int | None, cursor: str | None
) -> Op[t.Page[t.ProposalState]]:
    return _op("GET", "proposals", params=_page_params(limit, cursor, status=status))


def search(
    *,
    q: str,
    subject: str | None,
    kind: str | None,
    status: str | None,
    limit: int | None,
    cursor: str | None,
) -> Op[t.SearchPage]:
    params = _page_params(limit, cursor, q=q, subject=subject, kind=kind, status=status)
    return _op("GET", "search", params=params)


def list_fields() -> Op[t.FieldList]:
    return _op("GET", "fields")


def get_field(name: str) -> Op[t.FieldEntry]:
    return _op("GET", f"fields/{_seg(name)}")


def define_field(name: str, body: Mapping[str, Any]) -> Op[t.FieldEntry]:
    return _op("PUT", f"fields/{_seg(name)}", dict(body))


def build_context(
    *,
    subjects: list[str],
    context: Mapping[str, str] | None,
    purpose: str,
    max_tokens: int | None,
    fields: list[str] | None,
    task_id: str | None,
    encoding: str | None = None,
) -> Op[t.ContextBlock]:
    body: dict[str, Any] = {
        "subjects": list(subjects),
        "context": dict(context or {}),
        "purpose": purpose,
    }
    optional = {
        "max_tokens": max_tokens,
        "fields": fields,
        "task_id": task_id,
        "encoding": encoding,
    }
    body.update({name: value for name, value in optional.items() if value is not None})
    return _op("POST", "context", body)


# --- Resolve, tasks, policy ------------------------------------------------------------


def resolve(
    *,
    subject: str,
    context: Mapping[str, str] | None,
    fields: list[str] | None,
    valid_at: t.Time | None,
    known_at: t.Time | None,
    task_id: str | None,
    explain: bool,
) -> Op[t.Resolution]:
    body: dict[str, Any] = {"subject": subject, "context": dict(context or {}), "explain": explain}
    optional = {"fields": fields, "valid_at": valid_at, "known_at": known_at, "task_id": task_id}
    body.update({name: value for name, value in optional.items() if value is not None})
    return _op("POST", "resolve", body)


def check_task(task_id: str) -> Op[t.TaskCheck]:
    return _op("GET", f"tasks/{_seg(task_id)}")


def get_policy() -> Op[t.Policy]:
    return _op("GET", "policy")


def publish_policy(precedence: Mapping[str, Any], reason: str) -> Op[t.PublishedPolicy]:
    return _op("POST", "policy", {"precedence": dict(precedence), "reason": reason})


def revalidate(reason: str) -> Op[t.RevalidationStarted]:
    return _op("POST", "policy/revalidate", {"reason": reason})


def get_revalidation(job_id: str) -> Op[t.Revalidation]:
    return _op("GET", f"revalidations/{_seg(job_id)}")


# --- Audit -----------------------------------------------------------------------------


def list_audit(
    *,
    target: str | None,
    actor: str | None,
    action: str | None,
    since: t.Time | None,
    limit: int | None,
    cursor: str | None,
) -> Op[t.Page[t.AuditEvent]]:
    when = _encode(since) if isinstance(since, datetime) else since
    params = _page_params(limit, cursor, target=target, actor=actor, action=action, since=when)
    return _op("GET", "audit", params=params)


def verify_audit() -> Op[t.AuditVerification]:
    return _op("GET", "audit/verify")


# --- Webhooks --------------------------------------------------------------------------


def create_webhook(url: str, events: list[str], description: str) -> Op[t.Webhook]:
    body = {"url": url, "events": events, "description": description}
    return _op("POST", "webhooks", body)


def list_webhooks(limit: int | None, cursor: str | None) -> Op[t.Page[t.Webhook]]:
    return _op("GET", "webhooks", params=_page_params(limit, cursor))


def get_webhook(webhook_id: str) -> Op[t.Webhook]:
    return _op("GET", f"webhooks/{_seg(webhook_id)}")


def delete_webhook(webhook_id: str) -> Op[None]:
    return _op("DELETE", f"webhooks/{_seg(webhook_id)}", read=_nothing)


def rotate_webhook_secret(webhook_id: str) -> Op[t.Webhook]:
    return _op("POST", f"webhooks/{_seg(webhook_id)}/rotate-secret")


def enable_webhook(webhook_id: str) -> Op[t.WebhookEnabled]:
    return _op("POST", f"webhooks/{_seg(webhook_id)}/enable")


def list_webhook_deliveries(
    webhook_id: str, limit: int | None, cursor: str | None
) -> Op[t.Page[t.WebhookDelivery]]:
    params = _page_params(limit, cursor)
    return _op("GET", f"webhooks/{_seg(webhook_id)}/deliveries", params=params)


# --- Health and schema (site root, not under /api/v1/) ---------------------------------


def health() -> Op[t.Health]:
    return Op("GET", "/healthz", _json)


def readiness() -> Op[t.Health]:
    return Op("GET", "/readyz", _json, accept=frozenset({503}))


def openapi_schema() -> Op[dict[str, Any]]:
    return Op("GET", "/api/schema/", _json, params={"format": "json"})


# Each operation the server's OpenAPI description publishes (its ``operationId``) and the
# method of ``Memgov`` and ``AsyncMemgov`` that sends it. tests/client/test_operations.py
# reads the live schema: an operation without an entry here, or an entry without both
# methods, fails it, so a new endpoint cannot ship without its client method.
OPERATIONS: Mapping[str, str] = {
    "audit_list": "list_audit",
    "audit_verify": "verify_audit",
    "context_build": "build_context",
    "entity_list": "list_entities",
    "entity_create": "create_entity",
    "entity_get": "get_entity",
    "entity_alias_add": "add_alias",
    "entity_erase": "erase_entity",
    "entity_export": "export_entity",
    "entity_facts": "list_entity_facts",
    "entity_match_external_ref": "match_external_ref",
    "entity_kinds": "entity_kinds",
    "entity_match": "match_entity",
    "erasure_get": "get_erasure",
    "field_list": "list_fields",
    "field_get": "get_field",
    "field_define": "define_field",
    "memory_list": "list_memories",
    "memory_propose": "propose_memory",
    "memory_get": "get_memory",
    "memory_approve": "approve",
    "memory_checks": "list_checks",
    "memory_clarify": "clarify",
    "memory_link_subject": "link_subject",
    "memory_recheck": "recheck",
    "memory_reject": "reject",
    "memory_retire": "retire",
    "memory_scenarios": "list_scenarios",
    "memory_scenario_add": "add_scenario",
    "memory_scenario_remove": "remove_scenario",
    "memory_versions": "list_versions",
    "memory_correct": "correct_memory",
    "memory_version_get": "get_version",
    "policy_get": "get_policy",
    "policy_publish": "publish_policy",
    "policy_revalidate": "revalidate",
    "proposal_list_mine": "list_my_proposals",
    "resolve": "resolve",
    "revalidation_get": "get_revalidation",
    "search": "search",
    "source_record": "record_source",
    "source_get": "get_source",
    "source_revoke": "revoke_source",
    "source_visibility_change": "set_source_visibility",
    "task_get": "check_task",
    "webhook_list": "list_webhooks",
    "webhook_create": "create_webhook",
    "webhook_get": "get_webhook",
    "webhook_delete": "delete_webhook",
    "webhook_deliveries": "list_webhook_deliveries",
    "webhook_enable": "enable_webhook",
    "webhook_rotate_secret": "rotate_webhook_secret",
}
