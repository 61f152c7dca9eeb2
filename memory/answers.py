"""The answers an agent gets, whatever surface it calls through (the REST views in ``api``
and the MCP tools in ``agent_mcp``): validate the input, call the one service or selector,
represent the result. Both surfaces call these, so they cannot drift apart."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rest_framework import serializers

from core.errors import InvalidContent, NotFound
from core.principals import Principal, principal_for_key
from core.sql import on_postgresql
from memory import cache, keys, proposals, ratelimit, resolution, selectors, sources
from memory.auth import PrincipalRateThrottle
from memory.retrievals import task_record
from memory.serializers import (
    CorrectionInput,
    MatchInput,
    ProposalInput,
    ResolveInput,
    SourceInput,
    memory_representation,
    source_representation,
)


def validated(serializer_class: type[serializers.Serializer[Any]], data: Any) -> dict[str, Any]:
    """The input as the serializer accepts it; anything else is a 422 naming the fields."""
    if not isinstance(data, dict):
        raise InvalidContent({"request": ["the body must be a JSON object"]})
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


@dataclass(frozen=True)
class MemoryAnswer:
    """A memory representation and its version, which REST sends as ``ETag``."""

    body: dict[str, Any]

    @property
    def etag(self) -> str:
        return f'"{self.body["version"]}"'


def source_recorded(principal: Principal, data: Any) -> dict[str, Any]:
    source = sources.source_record(principal=principal, data=validated(SourceInput, data))
    return source_representation(source)


def entity_matched(principal: Principal, data: Any) -> dict[str, Any]:
    """``matched`` only when exactly one entity has that name or alias (API.md, Entities)."""
    valid = validated(MatchInput, data)
    matches = selectors.entity_match(
        principal=principal, name=valid["name"], kind=valid.get("kind") or None
    )
    decision = {0: "none", 1: "matched"}.get(len(matches), "ambiguous")
    candidates = [
        {"id": e.pk, "kind": e.kind, "name": e.name, "matched_on": on} for e, on in matches
    ]
    return {"decision": decision, "candidates": candidates}


def memory_head_answer(principal: Principal, memory_id: str) -> MemoryAnswer:
    item = selectors.access_memory(principal, memory_id)
    return MemoryAnswer(memory_representation(selectors.memory_head(item)))


def memory_proposed(principal: Principal, data: Any) -> MemoryAnswer:
    version = proposals.memory_propose(principal=principal, data=validated(ProposalInput, data))
    return memory_head_answer(principal, version.item_id)


def memory_corrected(
    principal: Principal, memory_id: str, if_match: str | None, data: Any
) -> MemoryAnswer:
    item = selectors.access_memory(principal, memory_id)
    valid = validated(CorrectionInput, data)
    version = proposals.memory_correct(
        principal=principal, item=item, if_match=if_match, data=valid
    )
    return memory_head_answer(principal, version.item_id)


def resolved(principal: Principal, data: Any) -> dict[str, Any]:
    return resolved_valid(principal, validated(ResolveInput, data))


class PassOn(Exception):
    """The hot path leaves this request to the full one, which answers or refuses it in
    its own words: the key is unknown or revoked, or the caller is over its rate (not
    counted, so the full path's throttle counts it once)."""


def resolved_for_key(raw_key: str, valid: Mapping[str, Any]) -> resolution.Answer:
    """``resolved_valid`` for a caller known by a bearer key (a cached answer as its JSON,
    ``resolution.Answer``), with each check riding on a
    round trip the answer needs anyway. With the cache: a key remembered here is taken on
    trust of its generation, which the one Redis script that counts the caller's rate and
    reads the cached answer confirms (no SQL when the answer is cached); a key not
    remembered is read first. Without the cache (on PostgreSQL): the candidate statement
    checks the key, and the rate is counted on its own. Raises ``PassOn`` rather than
    refusing."""
    cached = cache.enabled()
    principal: Principal | None = None
    generation: tuple[str, str] | None = None
    key_check: keys.KeyCheck | None = None
    if cached:
        trusted = keys.api_key_on_trust(raw_key)
        if trusted is not None:
            principal, generation = trusted
    elif on_postgresql():
        to_check = keys.api_key_to_check(raw_key)
        if to_check is not None:
            principal, key_check = to_check
    if principal is None:
        key = keys.api_key_checked(raw_key, for_trust=cached)
        if key is None:
            raise PassOn
        principal = principal_for_key(key)
    window = PrincipalRateThrottle().window(principal)
    if window is None and generation is not None:  # nothing to confirm it with: read it
        raise PassOn
    along = cache.ReadAlong(window, generation)
    try:
        return resolution.resolve_answer(principal, _resolve_request(valid), along, key_check)
    except cache.KeyUnconfirmed as exc:
        keys.forget(raw_key)
        raise PassOn from exc
    except (ratelimit.RateExceeded, keys.KeyRefused) as exc:
        raise PassOn from exc


def resolved_valid(
    principal: Principal,
    valid: Mapping[str, Any],
    along: cache.ReadAlong | None = None,
    key_check: keys.KeyCheck | None = None,
) -> dict[str, Any]:
    """The answer to input already validated (by ``ResolveInput`` or, on the hot path,
    ``plain_resolve_input``)."""
    return resolution.resolve_for(principal, _resolve_request(valid), along, key_check)


def _resolve_request(valid: Mapping[str, Any]) -> resolution.ResolveRequest:
    fields = valid.get("fields")
    return resolution.ResolveRequest(
        subject=valid["subject"],
        context=valid.get("context") or {},
        fields=tuple(dict.fromkeys(fields)) if fields else None,
        valid_at=valid.get("valid_at"),
        known_at=valid.get("known_at"),
        task_id=valid.get("task_id") or None,
        explain=valid["explain"],
    )


def task_checked(principal: Principal, task_id: str) -> Mapping[str, Any]:
    record = task_record(principal, task_id)
    if record is None:
        raise NotFound(f"No retrievals recorded for task {task_id}.")
    return record
