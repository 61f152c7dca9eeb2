"""What a change to a memory version asks to happen after it commits.

Each function writes outbox rows in the caller's transaction (core.outbox): the gate and
preview checks, the reviewers' and owners' emails. The approvals layer registers the tasks
that carry the kinds out, so nothing here imports it, nothing is sent for a rolled-back
write, and nothing is lost when the broker is down at commit."""

from __future__ import annotations

from core.kinds import OutboxKind
from core.outbox import outbox_write
from memory import semantic
from memory.models import MemoryVersion, Status


def after_version_recorded(version: MemoryVersion) -> None:
    """A preference goes straight to its gate checks; anything for review gets a preview
    run (so the reviewer sees the impact) and its reviewers are told; a held mention's
    reviewers are told it needs a subject before anyone can review it. Its text gets a
    vector (again, once a question settled its subject or value)."""
    semantic.after_recorded(tenant=version.tenant, version_ids=[version.pk])
    if version.status == Status.CHECKING:
        after_checks_requested(version)
    elif version.status == Status.PENDING_REVIEW:
        payload = {"version_id": version.pk}
        outbox_write(kind=OutboxKind.PREVIEW_CHECKS, payload=payload, tenant=version.tenant)
        outbox_write(kind=OutboxKind.PENDING_REVIEW, payload=payload, tenant=version.tenant)
    elif version.status == Status.HELD_UNRESOLVED:
        payload = {"version_id": version.pk}
        outbox_write(kind=OutboxKind.HELD_MENTION, payload=payload, tenant=version.tenant)


def after_scenario_added(version: MemoryVersion) -> None:
    """A new scenario changes what the preview says: run it again at once, so the
    reviewer reads the scenario's result before approving, not after (issue 37)."""
    if version.status == Status.PENDING_REVIEW:
        outbox_write(
            kind=OutboxKind.PREVIEW_CHECKS,
            payload={"version_id": version.pk},
            tenant=version.tenant,
        )


def after_checks_requested(version: MemoryVersion) -> None:
    outbox_write(
        kind=OutboxKind.GATE_CHECKS, payload={"version_id": version.pk}, tenant=version.tenant
    )


def after_checks_failed(version: MemoryVersion) -> None:
    outbox_write(
        kind=OutboxKind.CHECKS_FAILED, payload={"version_id": version.pk}, tenant=version.tenant
    )


def after_retired(versions: list[MemoryVersion]) -> None:
    if versions:
        outbox_write(
            kind=OutboxKind.RETIRED,
            payload={"version_ids": [v.pk for v in versions]},
            tenant=versions[0].tenant,
        )
