"""How sources, entities and memory versions are represented in answers (docs/api.md): the
REST API, the MCP tools, the dashboard and the export write them the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.principals import Principal
from core.times import iso
from memory.clarifications import clarification_body
from memory.models import Entity, MemoryVersion, Source, Status


def source_representation(source: Source) -> dict[str, Any]:
    return {
        "id": source.pk,
        "kind": source.kind,
        "content": source.content,
        "content_sha256": source.content_sha256,
        "external_ref": source.external_ref or None,
        "version": source.version or None,
        "speaker": source.speaker or None,
        "occurred_at": iso(source.occurred_at),
        "received_at": iso(source.received_at),
        "visibility": source.visibility,
        "metadata": source.metadata,
        "revoked_at": iso(source.revoked_at),
    }


def entity_representation(entity: Entity) -> dict[str, Any]:
    return {
        "id": entity.pk,
        "kind": entity.kind,
        "name": entity.name,
        "aliases": [a.alias for a in entity.aliases.all()],
        "external_ref": entity.external_ref or None,
        "created_at": iso(entity.created_at),
    }


def checks_summary(version: MemoryVersion) -> dict[str, Any]:
    """The latest deciding run (gate or revalidation) tells; before any, the preview shows
    what the reviewer will get. Results come ordered by ``ran_at``. ``run`` and ``ran_at``
    say which run the counts are from and when it ran (null before any run), so the item
    page, its status line and the API name the same run (issue 43)."""
    results = list(version.checks.all())
    deciding = [r for r in results if r.run in ("gate", "revalidation")]
    runs = deciding or [r for r in results if r.run == "preview"]
    last = runs[-1] if runs else None
    current = [
        r
        for r in runs
        if last is not None and (r.run, r.policy_version) == (last.run, last.policy_version)
    ]
    failed = sum(1 for r in current if r.outcome == "failed")
    if version.status == Status.CHECKING:
        status = "running"
    elif not current:
        status = "none"
    else:
        status = "failed" if failed else "passed"
    return {
        "status": status,
        "passed": len(current) - failed,
        "failed": failed,
        "total": len(current),
        "run": last.run if last is not None else None,
        "ran_at": iso(max(r.ran_at for r in current)) if current else None,
    }


ReasonFor = Callable[[MemoryVersion, Principal], str]


def _stored_reason(version: MemoryVersion, reader: Principal) -> str:
    return version.status_reason


# How the stored reason of a version's last status change reads to one reader. The check
# engine's reason names other memories by id ("regression: mem_… v1 still resolves"): the
# approvals layer, which words its checks, registers the reader's version at start
# (approvals/apps.py), since this layer cannot import it (issue 44).
_reason_for: list[ReasonFor] = [_stored_reason]


def reason_for_reader(wording: ReasonFor) -> None:
    """Register how a status reason is said to one reader (called once, at start)."""
    _reason_for[0] = wording


def memory_representation(version: MemoryVersion, reader: Principal) -> dict[str, Any]:
    """A version as ``reader`` may see it (the version itself was already found visible;
    what it copies from other memories, such as value options, is filtered here)."""
    item = version.item
    return {
        "id": version.item_id,
        "version": version.number,
        "active_version": getattr(version, "active_number", None),
        "kind": version.kind,
        "subject": version.subject_id,
        "subject_mention": item.subject_mention or None,
        "field": version.field,
        "value": version.value,
        "statement": version.statement,
        "scope": version.scope,
        "owner": version.owner.get_username(),
        "proposed_by": version.proposed_by,
        "expires_at": iso(version.expires_at),
        "valid_from": iso(version.valid_from),
        "valid_to": iso(version.valid_to),
        "assertion": version.assertion,
        "verification": version.verification,
        "status": version.status,
        "status_reason": _reason_for[0](version, reader) or None,
        "sources": version.source_ids,
        "basis": version.basis,
        "visibility": version.visibility,
        "required_reviewers": version.required_reviewers,
        "recorded_at": iso(version.recorded_at),
        "activated_at": iso(version.activated_at),
        "deactivated_at": iso(version.deactivated_at),
        "approvals": [
            {
                "reviewer": a.reviewer.get_username(),
                "decision": a.decision,
                "comment": a.comment,
                "at": iso(a.at),
            }
            for a in version.approvals.all()
        ],
        "approvals_required": version.approvals_required,
        "checks": checks_summary(version),
        # A held proposal's open question (subject or value unclear); no query otherwise.
        "needs_clarification": clarification_body(version, version.item_id, reader),
    }
