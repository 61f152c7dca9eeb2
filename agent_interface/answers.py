"""The answers an agent gets, whatever surface it calls through (the REST views in ``api``
and the MCP tools in ``agent_mcp``): validate the input, call the one service or selector,
represent the result. Both surfaces call these, so they cannot drift apart."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rest_framework import serializers

from agent_interface import resolve_input
from agent_interface.renderers import EncodedJSON
from agent_interface.serializers import (
    CorrectionInput,
    MatchInput,
    ProposalInput,
    ResolveInput,
    SourceInput,
)
from core import redis_client
from core.errors import InvalidContent, NotFound
from core.principals import Principal
from memory import proposals, resolution, selectors, sources
from memory.representations import memory_representation, source_representation
from memory.retrievals import task_record


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
    """``matched`` only when exactly one entity has that name or alias (docs/api.md, Entities)."""
    valid = validated(MatchInput, data)
    matches = selectors.entity_match(
        principal=principal, name=valid["name"], kind=valid.get("kind") or None
    )
    decision, shown = selectors.match_decision(matches)
    candidates = [{"id": e.pk, "kind": e.kind, "name": e.name, "matched_on": on} for e, on in shown]
    return {"decision": decision, "candidates": candidates}


def memory_head_answer(principal: Principal, memory_id: str) -> MemoryAnswer:
    item = selectors.access_memory(principal, memory_id)
    return MemoryAnswer(memory_representation(selectors.memory_head(item), principal))


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


def resolve_validated(data: Any) -> dict[str, Any]:
    """The resolve body as ``ResolveInput`` accepts it. A plainly valid body is read
    without the serializer (``agent_interface.resolve_input``: a tenth of a warm resolve's CPU);
    any other goes through it, so the serializer still answers every refusal."""
    valid = resolve_input.plainly_valid(data)
    return valid if valid is not None else validated(ResolveInput, data)


def resolved(principal: Principal, data: Any) -> dict[str, Any]:
    valid = resolve_validated(data)
    return resolution.resolve_for(principal, _resolve_request(valid))


def resolved_encoded(
    principal: Principal,
    data: Any,
    *,
    valid: Mapping[str, Any] | None = None,
    prefetched: redis_client.Prefetch | None = None,
) -> dict[str, Any] | EncodedJSON:
    """As ``resolved``, but an answer from the cache stays the JSON it was stored as, for
    a surface that sends JSON (``agent_interface.renderers``). ``valid`` and ``prefetched``:
    what ``resolve_read_ahead`` validated and read ahead of the handler."""
    if valid is None:
        valid = resolve_validated(data)
    answer = resolution.resolve_answer(principal, _resolve_request(valid), prefetched)
    return answer if isinstance(answer, dict) else EncodedJSON(answer)


def resolve_read_ahead(
    principal: Principal, data: Any
) -> tuple[dict[str, Any] | None, redis_client.ScriptCall | None]:
    """A resolve's input validated before its handler runs, and the cache read the handler
    will make (``agent_interface.auth.ReadsCacheAhead``). Invalid input gives (None, None): the
    handler validates it again and answers the 422 as always."""
    try:
        valid = resolve_validated(data)
    except (InvalidContent, serializers.ValidationError):
        return None, None
    return valid, resolution.cache_read_call(principal, _resolve_request(valid))


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
