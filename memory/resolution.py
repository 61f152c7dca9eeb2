"""Resolve: which facts apply to a task at a time, with evidence, reasons and abstentions.

Selection is one query (``memory.candidates``, which also reads the tenant's current
policy), the decision is the pure resolver, and a resolve with a ``task_id`` leaves a
retrieval record (what the agent was told)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

import orjson
from django.db import transaction
from django.utils import timezone

from core import metrics, redis_client
from core.principals import Principal
from core.times import iso, iso_instant
from memory import generations, resolver
from memory.candidates import (
    Authorities,
    CandidateRequest,
    load_candidates_policy_and_authorities,
)
from memory.models import RetrievalRecord, RetrievalUse
from memory.selectors import current_policy, require_subject, resolver_policy


class ResolveRequest(NamedTuple):
    """What a resolve asks (a tuple: built on every request, in a fifth of a frozen
    dataclass's time)."""

    subject: str
    context: Mapping[str, str]
    fields: tuple[str, ...] | None
    valid_at: datetime | None
    known_at: datetime | None
    task_id: str | None
    explain: bool


def _fact(fact: resolver.Fact) -> dict[str, Any]:
    c = fact.candidate
    return {
        "field": fact.field,
        "value": c.value,
        "memory_id": c.memory_id,
        "version": c.version,
        "kind": c.kind,
        "scope": dict(c.scope),
        "verification": c.verification,
        "valid_from": iso(c.valid_from),
        "valid_to": iso(c.valid_to),
        "expires_at": iso(c.expires_at),
        "sources": list(c.source_ids),
        "basis": dict(c.basis),
        "statement": c.statement,
        "pending_correction": c.pending_correction,
        "qualifiers": list(fact.qualifiers),
        "reason": fact.reason,
    }


def _marked(fact: dict[str, Any], authorities: Authorities) -> dict[str, Any]:
    """A fact of a field whose committed state another system holds is only advisory:
    say so and name the system (the keys appear only on such facts)."""
    system = authorities.get(fact["field"]) if authorities else None
    if system is not None:
        name, url, tool = system
        fact["advisory"] = True
        fact["authoritative_system"] = {"name": name, "url": url or None, "tool": tool or None}
    return fact


def _plan(plan: resolver.Plan) -> dict[str, Any]:
    c = plan.candidate
    return {
        "field": plan.field,
        "value": c.value,
        "memory_id": c.memory_id,
        "version": c.version,
        "valid_from": iso(c.valid_from),
        "statement": c.statement,
    }


@dataclass(frozen=True)
class Decision:
    policy_version: str
    resolution: resolver.Resolution
    valid_at: datetime
    known_at: datetime
    # The next instant a candidate starts, stops being valid or expires: a cached answer
    # must not outlive it.
    next_change: datetime | None
    # Fields whose committed state another system holds (field catalog): their facts are
    # advisory. Part of the cached answer: a catalog change moves the policy generation.
    authorities: Authorities = field(default_factory=dict)


def _next_change(candidates: list[resolver.Candidate], after: datetime) -> datetime | None:
    moments = [
        m
        for c in candidates
        for m in (c.valid_from, c.valid_to, c.expires_at)
        if m is not None and m > after
    ]
    return min(moments, default=None)


def decide(principal: Principal, request: ResolveRequest, now: datetime) -> Decision:
    """The answer without side effects: shared by the API, the cache and the dashboard."""
    valid_at, known_at = request.valid_at or now, request.known_at or now
    candidates, current, authorities = load_candidates_policy_and_authorities(
        CandidateRequest(
            tenant_id=principal.tenant.pk,
            subject_id=request.subject,
            fields=request.fields,
            context=request.context,
            known_at=known_at,
            prefilter=not request.explain,
            with_policy=True,
        )
    )
    if current is None or request.known_at is not None:
        # No candidate row carried the policy (nor proved the subject exists), or the
        # question is about the past, where an erased subject's versions still had a use.
        require_subject(principal.tenant, request.subject)
        policy = resolver_policy(current_policy(principal.tenant))
    else:
        policy = current
    query = resolver.Query(
        context=request.context,
        valid_at=valid_at,
        known_at=known_at,
        labels=principal.labels,
        fields=request.fields,
        explain=request.explain,
    )
    return Decision(
        policy.version,
        resolver.resolve(candidates, query, policy),
        valid_at,
        known_at,
        _next_change(candidates, min(valid_at, known_at)),
        authorities,
    )


def resolution_body(decision: Decision, *, explain: bool) -> dict[str, Any]:
    """The instants come first: a cached answer is stored without them and gets this
    request's put back in front (``_dated``), so both read alike."""
    resolution = decision.resolution
    body: dict[str, Any] = {
        "valid_at": iso(decision.valid_at),
        "known_at": iso(decision.known_at),
        "policy_version": decision.policy_version,
        "retrieval_id": None,
        "facts": [_marked(_fact(f), decision.authorities) for f in resolution.facts],
        "abstentions": [
            {"field": a.field, "reason": a.reason, "detail": a.detail}
            for a in resolution.abstentions
        ],
        "plans": [_plan(p) for p in resolution.plans],
    }
    if explain:
        body["considered"] = [
            {"memory_id": c.memory_id, "version": c.version, "field": c.field, "outcome": c.outcome}
            for c in resolution.considered
        ]
    return body


def retrieval_record(
    *,
    principal: Principal,
    task_id: str,
    policy_version: str,
    context: Mapping[str, str],
    facts: list[dict[str, Any]],
) -> RetrievalRecord:
    """What the task was told; later retirements flag it from these rows."""
    with transaction.atomic():
        record = RetrievalRecord.objects.create(
            tenant=principal.tenant,
            task_id=task_id,
            principal=principal.name,
            policy_version=policy_version,
            context=dict(context),
            retrieved_at=timezone.now(),
        )
        RetrievalUse.objects.bulk_create(
            RetrievalUse(
                retrieval=record,
                tenant=principal.tenant,
                task_id=task_id,
                item_id=f["memory_id"],
                version_number=f["version"],
                field=f["field"],
            )
            for f in facts
        )
    return record


def _fresh(principal: Principal, request: ResolveRequest, now: datetime) -> generations.Computed:
    decision = decide(principal, request, now)
    return resolution_body(decision, explain=request.explain), decision.next_change


# An answer as its body or, from the cache, as the JSON it was stored as with this
# request's instants put in: sent as it is, never decoded and encoded again.
Answer = dict[str, Any] | bytes
_INSTANTS = ("valid_at", "known_at")
# How entries are stored (without their instants); an entry key names it, so no process
# reads an entry stored another way.
ENTRY_FORM = 2


def cache_shape(principal: Principal, request: ResolveRequest) -> dict[str, Any]:
    """Everything besides the subject and the generations that an answer depends on."""
    return {
        "form": ENTRY_FORM,
        "labels": sorted(principal.labels),
        "context": dict(request.context),
        "fields": sorted(request.fields) if request.fields is not None else None,
        "explain": request.explain,
    }


def _undated(computed: generations.Computed) -> generations.Computed:
    """A fresh answer as the cache stores it: without the instants, which are the asking
    request's."""
    body, next_change = computed
    return {name: value for name, value in body.items() if name not in _INSTANTS}, next_change


def _dated(found: dict[str, Any] | bytes, now: datetime) -> Answer:
    """An answer for "now" as the cache gave it (stored JSON or a fresh body), with this
    instant as both ``valid_at`` and ``known_at``, first as ``resolution_body`` puts them."""
    stamp = iso_instant(now)
    if isinstance(found, dict):
        return {"valid_at": stamp, "known_at": stamp, **found}
    instants = b'{"valid_at":"%s","known_at":"%s",' % (stamp.encode(), stamp.encode())
    return instants + found[1:]


def cache_read_call(
    principal: Principal, request: ResolveRequest
) -> redis_client.ScriptCall | None:
    """The cache read this resolve will make, to be sent ahead with the throttle's script
    (``accounts.throttle.admit_with``), or None when it will make none or must read itself."""
    if request.valid_at is not None or request.known_at is not None:
        return None
    if not generations.may_prefetch():
        return None
    shape = cache_shape(principal, request)
    return generations.read_call(principal.tenant.id, request.subject, shape)


def _cached_answer(
    principal: Principal,
    request: ResolveRequest,
    now: datetime,
    prefetched: redis_client.Prefetch | None = None,
) -> Answer:
    """Only answers for "now" are cached; a hit is restamped with this instant."""
    if request.valid_at is not None or request.known_at is not None:
        metrics.resolve_cache_outcome("uncacheable")
        return _fresh(principal, request, now)[0]
    found = generations.get_or_compute(
        tenant_id=principal.tenant.id,
        subject_id=request.subject,
        shape=cache_shape(principal, request),
        compute=lambda: _undated(_fresh(principal, request, now)),
        prefetched=prefetched,
    )
    return _dated(found, now)


def _body(answer: Answer) -> dict[str, Any]:
    return answer if isinstance(answer, dict) else orjson.loads(answer)


def cached_resolution(
    principal: Principal, request: ResolveRequest, now: datetime
) -> dict[str, Any]:
    return _body(_cached_answer(principal, request, now))


def resolve_answer(
    principal: Principal,
    request: ResolveRequest,
    prefetched: redis_client.Prefetch | None = None,
) -> Answer:
    """The answer, and with a ``task_id`` its retrieval record (which needs the body)."""
    now = timezone.now()
    with metrics.RESOLVE_LATENCY.time():
        answer = _cached_answer(principal, request, now, prefetched)
    if not request.task_id:
        return answer
    body = _body(answer)
    record = retrieval_record(
        principal=principal,
        task_id=request.task_id,
        policy_version=body["policy_version"],
        context=request.context,
        facts=body["facts"],
    )
    body["retrieval_id"] = record.pk
    return body


def resolve_for(principal: Principal, request: ResolveRequest) -> dict[str, Any]:
    return _body(resolve_answer(principal, request))
