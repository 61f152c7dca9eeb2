"""Whether a version's preview still says what activation would do (issue 43, point 4).

A preview is run when a version enters review and when a scenario is added or removed;
what it found can also change without the version changing: another memory of the same
subject and field starts or ends its use, the tenant publishes a policy, a cited source
is revoked. A preview older than the latest such change says so, and is run again
(``preview_refresh``), so the reviewer never approves on a stale answer."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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
    if version.status != Status.PENDING_REVIEW or version.subject_id is None:
        return None
    preview = latest_preview(version.checks.all())
    if not preview:
        return Stale(ran_at=None, change="it was recorded", changed_at=version.recorded_at)
    ran_at = min(r.ran_at for r in preview)
    changes: list[tuple[datetime, str]] = []
    added = (
        Scenario.objects.filter(
            version__item_id=version.item_id,
            version__number__lte=version.number,
            created_at__gt=ran_at,
        )
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    if added is not None:
        changes.append((added, "a scenario was added"))
    removed = (
        ScenarioRemoval.objects.filter(
            scenario__version__item_id=version.item_id, removed_at__gt=ran_at
        )
        .order_by("-removed_at")
        .values_list("removed_at", flat=True)
        .first()
    )
    if removed is not None:
        changes.append((removed, "a scenario was removed"))
    sibling = (
        MemoryVersion.objects.filter(
            tenant_id=version.tenant_id, subject_id=version.subject_id, field=version.field
        )
        .exclude(item_id=version.item_id)
        .filter(Q(activated_at__gt=ran_at) | Q(deactivated_at__gt=ran_at))
        .order_by("-status_changed_at")
        .first()
    )
    if sibling is not None:
        moments = [m for m in (sibling.activated_at, sibling.deactivated_at) if m is not None]
        began = sibling.activated_at is not None and sibling.activated_at > ran_at
        said = "started" if began and sibling.status == Status.ACTIVE else "stopped"
        changes.append((max(moments), f"another memory of this field {said} being used"))
    published = (
        Policy.objects.filter(tenant_id=version.tenant_id, published_at__gt=ran_at)
        .order_by("-published_at")
        .values_list("published_at", flat=True)
        .first()
    )
    if published is not None:
        changes.append((published, "a new policy was published"))
    revoked = (
        Source.objects.filter(pk__in=version.source_ids, revoked_at__gt=ran_at)
        .order_by("-revoked_at")
        .values_list("revoked_at", flat=True)
        .first()
    )
    if revoked is not None:
        changes.append((revoked, "a source it cites was revoked"))
    if not changes:
        return None
    changed_at, change = max(changes, key=lambda c: c[0])
    return Stale(ran_at=ran_at, change=change, changed_at=changed_at)


def preview_refresh(*, version: MemoryVersion) -> Stale | None:
    """Run a stale preview again: an outbox row for the preview task, unless one was
    already written since the change (by ``scenario_add`` or an earlier refresh), so a
    page polled every two seconds asks once. Returns what made it stale, or None."""
    stale = preview_staleness(version)
    if stale is None:
        return None
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
    return stale
