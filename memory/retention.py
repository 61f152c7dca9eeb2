"""Retention (docs/design.md, Retention and erasure): each tenant keeps source content, retrieval
records and the values of versions out of use only as long as its settings say.

``retention_run`` is the daily beat task's service. Per tenant with a setting it purges in
batches, each batch its own transaction (a run killed half-way leaves only finished
batches; the next run picks up what is still due, because every filter selects only
rows that still need the change), then appends one ``retention.purged`` audit event with
the counts of the run:

- ``source_content_days``: content of sources received longer ago is purged (set to
  null; the sha256 stays) unless an active or pending version cites the source;
- ``retrieval_days``: retrieval records (and their uses) older than that are deleted;
- ``inactive_version_days``: versions retired or expired for longer have their value,
  statement and basis purged and ``erased_at`` set.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from audit.services import audit_append
from core.errors import InvalidContent
from core.models import Tenant
from memory.models import OPEN_STATUSES, MemoryVersion, RetrievalRecord, Source, Status

logger = logging.getLogger(__name__)

BATCH = 500
SETTINGS = ("source_content_days", "retrieval_days", "inactive_version_days")
# A source cited by one of these is still evidence someone relies on or is deciding on.
CITING_STATUSES = (Status.ACTIVE, *OPEN_STATUSES)
MAX_DAYS = 36500


def retention_set(
    *, tenant: Tenant, days: Mapping[str, int | None], actor: str = "operator"
) -> Tenant:
    """Change the retention settings given (``None`` keeps forever), audited with the old
    and new values. Only the names in ``SETTINGS`` are accepted."""
    errors = {}
    for name, value in days.items():
        if name not in SETTINGS:
            errors[name] = [f"unknown setting; one of {', '.join(SETTINGS)}"]
        elif value is not None and not (0 <= value <= MAX_DAYS):
            errors[name] = [f"must be between 0 and {MAX_DAYS} days"]
    if errors:
        raise InvalidContent(errors)
    with transaction.atomic(durable=True):
        locked = Tenant.objects.select_for_update(no_key=True).get(pk=tenant.pk)
        changes = {
            name: {"from": getattr(locked, name), "to": value}
            for name, value in days.items()
            if getattr(locked, name) != value
        }
        for name, change in changes.items():
            setattr(locked, name, change["to"])
        if changes:
            locked.save(update_fields=list(changes))
            audit_append(
                tenant=locked,
                actor=actor,
                action="tenant.retention_changed",
                target_type="tenant",
                target_id=locked.slug,
                data=changes,
            )
    return locked


def _in_batches(rows: QuerySet[Any], change: Callable[[list[Any]], int]) -> int:
    """Apply ``change`` to the primary keys of ``rows`` a batch at a time, each batch in
    its own transaction; the total it reports changing."""
    total = 0
    while True:
        with transaction.atomic(durable=True):
            ids = list(rows.order_by("pk").values_list("pk", flat=True)[:BATCH])
            if not ids:
                return total
            changed = change(ids)
        total += changed
        logger.info("retention: %d changed (%d so far)", changed, total)
        if len(ids) < BATCH:
            return total


def _purge_source_content(tenant: Tenant, before: datetime) -> int:
    cited = MemoryVersion.objects.filter(
        tenant=tenant, status__in=CITING_STATUSES, sources__isnull=False
    ).values("sources")
    due = Source.objects.filter(
        tenant=tenant, received_at__lt=before, content__isnull=False
    ).exclude(pk__in=cited)
    return _in_batches(
        due,
        lambda ids: Source.objects.filter(pk__in=ids, content__isnull=False).update(content=None),
    )


def _delete_retrievals(tenant: Tenant, before: datetime) -> int:
    due = RetrievalRecord.objects.filter(tenant=tenant, retrieved_at__lt=before)
    label = RetrievalRecord._meta.label

    def delete(ids: list[str]) -> int:
        return RetrievalRecord.objects.filter(pk__in=ids).delete()[1].get(label, 0)

    return _in_batches(due, delete)


# Versions that will never be used again: a corrected one as much as a retired one
# (docs/design.md, Retention: "the values of versions out of use").
OUT_OF_USE = (Status.SUPERSEDED, Status.REJECTED, Status.RETIRED, Status.EXPIRED)


def _purge_inactive_versions(tenant: Tenant, before: datetime) -> int:
    due = MemoryVersion.objects.filter(
        tenant=tenant,
        status__in=OUT_OF_USE,
        status_changed_at__lt=before,
        erased_at__isnull=True,
    )
    now = timezone.now()
    return _in_batches(
        due,
        lambda ids: MemoryVersion.objects.filter(pk__in=ids, erased_at__isnull=True).update(
            # The status reason may quote the value ("value clarified: …"): it goes too.
            value=None,
            statement="",
            basis={},
            status_reason="",
            erased_at=now,
        ),
    )


def retention_run_tenant(tenant: Tenant, *, now: datetime | None = None) -> dict[str, int]:
    """One run for one tenant, audited once with its counts."""
    now = now or timezone.now()
    counts = {"sources_purged": 0, "retrieval_records": 0, "versions_purged": 0}
    if tenant.source_content_days is not None:
        before = now - timedelta(days=tenant.source_content_days)
        counts["sources_purged"] = _purge_source_content(tenant, before)
    if tenant.retrieval_days is not None:
        before = now - timedelta(days=tenant.retrieval_days)
        counts["retrieval_records"] = _delete_retrievals(tenant, before)
    if tenant.inactive_version_days is not None:
        before = now - timedelta(days=tenant.inactive_version_days)
        counts["versions_purged"] = _purge_inactive_versions(tenant, before)
    with transaction.atomic(durable=True):
        audit_append(
            tenant=tenant,
            actor="system:retention",
            action="retention.purged",
            target_type="tenant",
            target_id=tenant.slug,
            data={
                "counts": counts,
                "settings": {name: getattr(tenant, name) for name in SETTINGS},
            },
        )
    return counts


def retention_run(*, now: datetime | None = None) -> dict[str, dict[str, int]]:
    """Every tenant with a retention setting (the daily beat task)."""
    tenants = Tenant.objects.exclude(
        source_content_days=None, retrieval_days=None, inactive_version_days=None
    ).order_by("pk")
    return {tenant.slug: retention_run_tenant(tenant, now=now) for tenant in tenants}
