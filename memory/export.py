"""Everything held about a subject as one JSON document (docs/api.md, Retention and erasure).

The document is produced as a stream of byte chunks: each section is a query read with
``.iterator(chunk_size=…)`` and written one row at a time, so a subject with tens of
thousands of versions costs the memory of one chunk, not of the whole answer.

Shape: ``{"entity": {…}, "aliases": [...], "versions": [...], "sources": [...],
"retrievals": [...], "audit_events": [...]}``; a version names its ``memory_id`` and
carries what people wrote about it: its custom ``scenarios``, the reviewers' ``approvals``
(with their comments) and the ``task_flags`` it caused (with their reasons), the free
text an erasure clears too."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from django.db.models import Prefetch

from audit.models import AuditEvent
from audit.representations import event_representation
from core.authority import require_export
from core.principals import Principal
from core.times import iso
from memory.models import (
    Entity,
    MemoryItem,
    MemoryVersion,
    RetrievalUse,
    Scenario,
    Source,
    TaskFlag,
)
from memory.representations import source_representation
from memory.selectors import access_entity

CHUNK = 500
SECTIONS = ("aliases", "versions", "sources", "retrievals", "audit_events")


def export_subject(principal: Principal, subject_id: str) -> Iterator[bytes]:
    """Check access now (so a refusal is an ordinary 403/404), then stream."""
    require_export(principal)
    entity = access_entity(principal, subject_id)
    return _document(entity)


def _dump(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _array(rows: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    yield b"["
    first = True
    for row in rows:
        yield _dump(row) if first else b"," + _dump(row)
        first = False
    yield b"]"


def _document(entity: Entity) -> Iterator[bytes]:
    head = {
        "id": entity.pk,
        "kind": entity.kind,
        "name": entity.name,
        "external_ref": entity.external_ref or None,
        "created_at": iso(entity.created_at),
        "erased_at": iso(entity.erased_at),
    }
    yield b'{"entity":' + _dump(head)
    sections = {
        "aliases": _aliases(entity),
        "versions": _versions(entity),
        "sources": _sources(entity),
        "retrievals": _retrievals(entity),
        "audit_events": _audit_events(entity),
    }
    for name in SECTIONS:
        yield f',"{name}":'.encode()
        yield from _array(sections[name])
    yield b"}"


def _aliases(entity: Entity) -> Iterator[dict[str, Any]]:
    for alias in entity.aliases.order_by("pk").iterator(chunk_size=CHUNK):
        yield {"alias": alias.alias, "source": alias.source_id, "created_at": iso(alias.created_at)}


def _versions(entity: Entity) -> Iterator[dict[str, Any]]:
    """In chunks: each chunk's scenarios and approvals are prefetched, its task flags read
    in one query (they name the lineage and the version's number, not the version)."""
    rows = (
        MemoryVersion.objects.filter(tenant_id=entity.tenant_id, subject=entity)
        .select_related("owner")
        .prefetch_related(
            Prefetch("scenarios", queryset=Scenario.objects.order_by("pk")), "approvals__reviewer"
        )
        .order_by("item_id", "number")
    )
    versions = rows.iterator(chunk_size=CHUNK)
    while chunk := list(islice(versions, CHUNK)):
        flags = _task_flags(entity, {v.item_id for v in chunk})
        for v in chunk:
            yield {**_version(v), "task_flags": flags.get((v.item_id, v.number), [])}


def _task_flags(entity: Entity, items: set[str]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    flags: dict[tuple[str, int], list[dict[str, Any]]] = {}
    rows = TaskFlag.objects.filter(tenant_id=entity.tenant_id, item_id__in=items).order_by("pk")
    for flag in rows:
        flags.setdefault((flag.item_id, flag.version_number), []).append(
            {
                "task_id": flag.task_id,
                "event": flag.event,
                "reason": flag.reason,
                "at": iso(flag.at),
            }
        )
    return flags


def _version(v: MemoryVersion) -> dict[str, Any]:
    return {
        "memory_id": v.item_id,
        "version": v.number,
        "kind": v.kind,
        "field": v.field,
        "value": v.value,
        "statement": v.statement,
        "scope": v.scope,
        "status": v.status,
        "status_reason": v.status_reason,
        "owner": v.owner.get_username(),
        "proposed_by": v.proposed_by,
        "verification": v.verification,
        "assertion": v.assertion,
        "sources": v.source_ids,
        "basis": v.basis,
        "valid_from": iso(v.valid_from),
        "valid_to": iso(v.valid_to),
        "expires_at": iso(v.expires_at),
        "recorded_at": iso(v.recorded_at),
        "activated_at": iso(v.activated_at),
        "deactivated_at": iso(v.deactivated_at),
        "status_changed_at": iso(v.status_changed_at),
        "erased_at": iso(v.erased_at),
        "scenarios": [
            {**scenario.as_dict(), "created_by": scenario.created_by}
            for scenario in v.scenarios.all()
        ],
        "approvals": [
            {
                "reviewer": a.reviewer.get_username(),
                "decision": a.decision,
                "comment": a.comment,
                "at": iso(a.at),
            }
            for a in v.approvals.all()
        ],
    }


def _sources(entity: Entity) -> Iterator[dict[str, Any]]:
    cited = MemoryVersion.objects.filter(tenant_id=entity.tenant_id, subject=entity).values(
        "sources"
    )
    rows = Source.objects.filter(tenant_id=entity.tenant_id, pk__in=cited).order_by("pk")
    for source in rows.iterator(chunk_size=CHUNK):
        yield source_representation(source)


def _retrievals(entity: Entity) -> Iterator[dict[str, Any]]:
    items = MemoryItem.objects.filter(tenant_id=entity.tenant_id, subject=entity).values("pk")
    rows = (
        RetrievalUse.objects.filter(tenant_id=entity.tenant_id, item__in=items)
        .select_related("retrieval")
        .order_by("retrieval_id", "pk")
    )
    for use in rows.iterator(chunk_size=CHUNK):
        record = use.retrieval
        yield {
            "retrieval_id": record.pk,
            "task_id": use.task_id,
            "principal": record.principal,
            "policy_version": record.policy_version,
            "context": record.context,
            "retrieved_at": iso(record.retrieved_at),
            "memory_id": use.item_id,
            "version": use.version_number,
            "field": use.field,
        }


def _audit_events(entity: Entity) -> Iterator[dict[str, Any]]:
    """Events whose target is the subject, one of its items or a source they cite."""
    tenant = entity.tenant_id
    items = MemoryItem.objects.filter(tenant_id=tenant, subject=entity).values("pk")
    cited = MemoryVersion.objects.filter(tenant_id=tenant, subject=entity).values("sources")
    sources = Source.objects.filter(tenant_id=tenant, pk__in=cited).values("pk")
    for target in (
        AuditEvent.objects.filter(tenant_id=tenant, target_id=entity.pk),
        AuditEvent.objects.filter(tenant_id=tenant, target_type="memory", target_id__in=items),
        AuditEvent.objects.filter(tenant_id=tenant, target_type="source", target_id__in=sources),
    ):
        for event in target.order_by("seq").iterator(chunk_size=CHUNK):
            yield event_representation(event)
