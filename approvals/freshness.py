"""Whether a version's preview still says what activation would do (issue 43, point 4).

A preview is run when a version enters review and when a scenario is added or removed;
what it found can also change without the version changing: another memory of the same
subject and field starts or ends its use, the tenant publishes a policy, a cited source
is revoked. A preview older than the latest such change says so, and is run again
(``preview_refresh``), so the reviewer never approves on a stale answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q

from approvals.explain import latest_preview
from approvals.models import ScenarioRemoval
from core.kinds import OutboxKind
from core.models import Outbox
from core.outbox import outbox_write
from memory.models import MemoryVersion, Policy, Scenario, Source, Status


@dataclass(frozen=True)
class Stale:
    """The preview ran at ``ran_at``, before ``change`` (in words) at ``changed_at``; a
    version in review with no preview yet has ``ran_at`` None (its first run is due)."""

    ran_at: datetime | None
    change: str
    changed_at: datetime


def preview_staleness(version: MemoryVersion) -> Stale | None:
    """The latest change since the last preview run that may change its answer, or None
    when the preview is current (or there is none to be stale: not in review). A version
    in review with no preview yet is due its first one, asked for when it was recorded."""
    return previews_staleness([version]).get(version.pk)


def previews_staleness(versions: Sequence[MemoryVersion]) -> dict[int, Stale]:
    """``preview_staleness`` for many versions (the queue's rows) in six queries, whatever
    their number: version id → what made its preview stale, for the stale ones only."""
    in_review = [
        v for v in versions if v.status == Status.PENDING_REVIEW and v.subject_id is not None
    ]
    stale: dict[int, Stale] = {}
    ran: dict[int, datetime] = {}
    for version in in_review:
        preview = latest_preview(version.checks.all())
        if preview:
            ran[version.pk] = min(r.ran_at for r in preview)
        else:
            stale[version.pk] = Stale(None, "it was recorded", version.recorded_at)
    ran_versions = [v for v in in_review if v.pk in ran]
    if not ran_versions:
        return stale
    since = min(ran.values())
    changes = _changes_since(ran_versions, since)
    for version in ran_versions:
        found = [(at, words) for at, words in changes(version) if at > ran[version.pk]]
        if found:
            changed_at, change = max(found, key=lambda c: c[0])
            stale[version.pk] = Stale(ran[version.pk], change, changed_at)
    return stale


def _changes_since(
    versions: list[MemoryVersion], since: datetime
) -> Callable[[MemoryVersion], list[tuple[datetime, str]]]:
    """Every change after ``since`` that may affect one of ``versions``' previews, read
    once; the returned function picks a version's own (each still to be compared with
    when that version's preview ran)."""
    items = {v.item_id for v in versions}
    tenants = {v.tenant_id for v in versions}
    added: dict[str, list[tuple[int, datetime]]] = {}
    for item_id, number, at in Scenario.objects.filter(
        version__item_id__in=items, created_at__gt=since
    ).values_list("version__item_id", "version__number", "created_at"):
        added.setdefault(item_id, []).append((number, at))
    removed: dict[str, list[datetime]] = {}
    for item_id, at in ScenarioRemoval.objects.filter(
        scenario__version__item_id__in=items, removed_at__gt=since
    ).values_list("scenario__version__item_id", "removed_at"):
        removed.setdefault(item_id, []).append(at)
    siblings: dict[tuple[str | None, str], list[tuple[str, list[datetime], str]]] = {}
    for row in MemoryVersion.objects.filter(
        Q(activated_at__gt=since) | Q(deactivated_at__gt=since),
        tenant_id__in=tenants,
        subject_id__in={v.subject_id for v in versions},
        field__in={v.field for v in versions},
    ).values("subject_id", "field", "item_id", "activated_at", "deactivated_at", "status"):
        moments = [m for m in (row["activated_at"], row["deactivated_at"]) if m is not None]
        siblings.setdefault((row["subject_id"], row["field"]), []).append(
            (row["item_id"], moments, _sibling_words(row, since))
        )
    published: dict[int, list[datetime]] = {}
    for tenant_id, at in Policy.objects.filter(
        tenant_id__in=tenants, published_at__gt=since
    ).values_list("tenant_id", "published_at"):
        published.setdefault(tenant_id, []).append(at)
    revoked: dict[str, datetime] = {
        pk: at
        for pk, at in Source.objects.filter(
            pk__in={pk for v in versions for pk in v.source_ids}, revoked_at__gt=since
        ).values_list("pk", "revoked_at")
        if at is not None
    }

    def changes(version: MemoryVersion) -> list[tuple[datetime, str]]:
        found = [
            (at, "a scenario was added")
            for number, at in added.get(version.item_id, [])
            if number <= version.number
        ]
        found += [(at, "a scenario was removed") for at in removed.get(version.item_id, [])]
        for item_id, moments, words in siblings.get((version.subject_id, version.field), []):
            if item_id != version.item_id:
                found.append((max(moments), words))
        found += [(at, "a new policy was published") for at in published.get(version.tenant_id, [])]
        found += [
            (revoked[pk], "a source it cites was revoked")
            for pk in version.source_ids
            if pk in revoked
        ]
        return found

    return changes


def _sibling_words(row: Mapping[str, Any], since: datetime) -> str:
    began = row["activated_at"] is not None and row["activated_at"] > since
    said = "started" if began and row["status"] == Status.ACTIVE else "stopped"
    return f"another memory of this field {said} being used"


def preview_refresh(*, version: MemoryVersion) -> Stale | None:
    """Run a stale preview again (``preview_rerun``). Returns what made it stale, or None."""
    stale = preview_staleness(version)
    if stale is not None:
        preview_rerun(version, stale)
    return stale


def preview_rerun(version: MemoryVersion, stale: Stale) -> None:
    """An outbox row for the preview task, unless one was already written since the
    change (by ``scenario_add`` or an earlier rerun), so a page polled every two seconds
    asks once."""
    with transaction.atomic(durable=True):
        asked = Outbox.objects.filter(
            kind=OutboxKind.PREVIEW_CHECKS,
            payload__version_id=version.pk,
            created_at__gte=stale.changed_at,
        ).exists()
        if not asked:
            outbox_write(
                kind=OutboxKind.PREVIEW_CHECKS,
                payload={"version_id": version.pk},
                tenant=version.tenant,
            )
