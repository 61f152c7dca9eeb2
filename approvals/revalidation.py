"""Revalidation (docs/design.md, Revalidation): after a policy, model, prompt or tool change the
checks of every active item run again; an item that now fails is suspended
(``checks_failed``, reason ``revalidation``) or, when the tenant says ``flag``, only listed.

The job is recorded with an outbox row in the transaction that causes it (publishing a
policy included); its chunks are enqueued by a task, and a job that stops moving is
resumed by the sweeper from its own bookkeeping (which versions have no result yet)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery import current_app
from django.db import transaction
from django.utils import timezone

from approvals import check_lookups, checking, checks
from approvals.checking import ACTOR
from approvals.models import CheckResult, RevalidatedVersion, Revalidation
from audit.services import audit_append
from core.authority import has_tenant_permission, require_tenant_permission, version_visible
from core.errors import NotFound
from core.kinds import OutboxKind
from core.models import Tenant
from core.outbox import outbox_write
from core.principals import Principal
from memory import events
from memory.lifecycle import bump_on_commit, flag_tasks, version_transition
from memory.models import MemoryItem, MemoryVersion, Policy, Status
from memory.policy import MANAGE_POLICY_REFUSAL, policy_record, proposed_policy
from memory.selectors import current_policy

logger = logging.getLogger(__name__)
# The thin Celery wrappers of this module's entry points (approvals.tasks), by name: the
# tasks module imports this one.
CHUNK_TASK = "approvals.tasks.revalidate_chunk"
RUN_TASK = "approvals.tasks.revalidation_run"
CHUNK = 50
SUSPENDED_REASON = "revalidation"


def may_see_flagged(principal: Principal) -> bool:
    """Which memories failed is shown to people who manage policy or read the audit."""
    return principal.user is not None and any(
        has_tenant_permission(principal, codename) for codename in ("manage_policy", "view_audit")
    )


def access_revalidation(principal: Principal, job_id: str) -> Revalidation:
    """The caller's tenant's revalidation job (404 for another tenant's); what of it the
    caller sees is ``may_see_flagged``'s."""
    job = Revalidation.objects.filter(tenant=principal.tenant, pk=job_id).first()
    if job is None:
        raise NotFound(f"No revalidation {job_id}.")
    return job


@transaction.atomic
def revalidation_start(*, tenant: Tenant, reason: str, actor: str) -> Revalidation:
    """Record the job (inside the caller's transaction when there is one) with the outbox
    row that starts it after commit; nothing runs for a rolled-back write."""
    policy = current_policy(tenant)
    ids = list(
        MemoryVersion.objects.filter(tenant=tenant, status=Status.ACTIVE)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    now = timezone.now()
    job = Revalidation.objects.create(
        tenant=tenant,
        reason=reason,
        policy_version=str(policy.version),
        total=len(ids),
        version_ids=ids,
        started_by=actor,
        started_at=now,
        progress_at=now,
        status=Revalidation.Status.DONE if not ids else Revalidation.Status.RUNNING,
        finished_at=now if not ids else None,
    )
    audit_append(
        tenant=tenant,
        actor=actor,
        action="revalidation.started",
        target_type="revalidation",
        target_id=job.pk,
        data={"total": len(ids), "policy_version": job.policy_version},
    )
    if ids:
        outbox_write(kind=OutboxKind.REVALIDATION_RUN, payload={"job_id": job.pk}, tenant=tenant)
    else:
        _announce_finished(job)
    return job


@transaction.atomic(durable=True)
def policy_publish_and_revalidate(
    *, principal: Principal, precedence: Mapping[str, Any], reason: str
) -> tuple[Policy, Revalidation]:
    """A new policy is only trusted once every active item passed its checks under it; the
    policy, its job and the job's outbox row commit together or not at all."""
    policy = policy_record(principal=principal, precedence=precedence, reason=reason)
    job = revalidation_start(
        tenant=principal.tenant,
        actor=principal.name,
        reason=f"policy {policy.version} published: {reason}",
    )
    return policy, job


DRY_RUN_LIMIT = 2000  # active items checked in one request; a larger tenant is told


@dataclass(frozen=True)
class DryRun:
    """What publishing a precedence would do to the items in use, before anyone does it."""

    checked: int
    total: int
    suspends: bool  # the tenant's setting: suspend failing items, or only flag them
    failing: list[tuple[MemoryVersion, list[str]]]  # those the caller may see: scenario names
    hidden_failing: int


def policy_dry_run(*, principal: Principal, precedence: Mapping[str, Any]) -> DryRun:
    """Run every active item's checks under the proposed precedence, writing nothing: the
    revalidation a publish would start, read ahead (issue 43)."""
    require_tenant_permission(principal, "manage_policy", MANAGE_POLICY_REFUSAL)
    policy = proposed_policy(precedence)
    active = MemoryVersion.objects.filter(tenant=principal.tenant, status=Status.ACTIVE)
    versions = list(active.select_related("tenant").order_by("pk")[:DRY_RUN_LIMIT])
    now = timezone.now()
    failing: list[tuple[MemoryVersion, list[str]]] = []
    hidden = 0
    with check_lookups.tenant_lookups(versions):
        for version in versions:
            failed = [o.spec.name for o in checks.run_all(version, policy, now) if not o.passed]
            if not failed:
                continue
            if version_visible(version, principal):
                failing.append((version, failed))
            else:
                hidden += 1
    return DryRun(
        checked=len(versions),
        total=len(versions) if len(versions) < DRY_RUN_LIMIT else active.count(),
        suspends=principal.tenant.revalidation_failure == Tenant.RevalidationFailure.SUSPEND,
        failing=failing,
        hidden_failing=hidden,
    )


@transaction.atomic(durable=True)
def revalidation_request(*, principal: Principal, reason: str) -> Revalidation:
    """ "The model, prompt or tools changed": re-check every active item (manage_policy)."""
    require_tenant_permission(principal, "manage_policy", MANAGE_POLICY_REFUSAL)
    return revalidation_start(tenant=principal.tenant, actor=principal.name, reason=reason)


def _missing(job: Revalidation) -> list[int]:
    """The job's versions it has not counted yet (its own bookkeeping)."""
    done = set(RevalidatedVersion.objects.filter(job=job).values_list("version_id", flat=True))
    return [pk for pk in job.version_ids if pk not in done]


def revalidation_enqueue_missing(*, job_id: str) -> int:
    """Enqueue the chunks still to do (all of them at first; the lost ones on resume).
    Safe to repeat: a chunk delivered twice counts each version once."""
    job = Revalidation.objects.get(pk=job_id)
    if job.status != Revalidation.Status.RUNNING:
        return 0
    missing = _missing(job)
    for i in range(0, len(missing), CHUNK):
        current_app.tasks[CHUNK_TASK].delay(job.pk, missing[i : i + CHUNK])
    return len(missing)


def revalidation_resume_stalled(*, stalled_after: timedelta) -> list[str]:
    """Jobs ``running`` without progress for a while lost a chunk (broker outage, dead
    worker); each is claimed by a conditional update on its progress time, then resumed."""
    now = timezone.now()
    stalled = Revalidation.objects.filter(
        status=Revalidation.Status.RUNNING, progress_at__lt=now - stalled_after
    )
    resumed = []
    for job_id, seen in stalled.values_list("pk", "progress_at"):
        claimed = Revalidation.objects.filter(pk=job_id, progress_at=seen).update(progress_at=now)
        if claimed:
            logger.warning("revalidation %s stalled since %s; resuming", job_id, seen)
            current_app.tasks[RUN_TASK].delay(job_id=job_id)
            resumed.append(job_id)
    return resumed


# A chunk reads and writes the job's progress only. Its list of versions (fixed at the
# start; tens of thousands of ids) was decoded twice and written back whole per chunk.
_LIST_FIELDS = ("version_ids",)
_PROGRESS_FIELDS = ("done", "failed", "flagged", "progress_at", "status", "finished_at")


def revalidation_chunk(*, job_id: str, version_ids: list[int]) -> None:
    """Re-run the checks of a chunk of versions; count, flag or suspend the failures.

    The versions are evaluated one by one against what the chunk read for all of them at
    once (``check_lookups.tenant_lookups``: one query each for their sources' labels, custom
    scenarios, active siblings and candidate pools), and their results, audit events
    and counts commit together under the job's lock: one transaction, one bulk upsert and
    one chained audit append for the chunk instead of a transaction per version. A failure
    that suspends its item commits at once, with what was evaluated before it, so the
    versions after it are checked without it, as one-by-one commits would check them.
    Whatever was evaluated before an error is still committed; a chunk redelivered after
    a crash skips exactly the versions already counted."""
    job = Revalidation.objects.select_related("tenant").defer(*_LIST_FIELDS).get(pk=job_id)
    suspends = job.tenant.revalidation_failure == Tenant.RevalidationFailure.SUSPEND
    done = _rechecked_ids(job, version_ids)
    versions = [
        v
        for v in MemoryVersion.objects.filter(pk__in=version_ids)
        .select_related("tenant")
        .order_by("pk")
        if v.pk not in done
    ]
    evaluated: list[checking.Checked] = []
    with check_lookups.tenant_lookups(versions):
        try:
            for position, version in enumerate(versions):
                checked = (version, *checking.evaluate_current(version))
                evaluated.append(checked)
                if suspends and not all(outcome.passed for outcome in checked[3]):
                    batch, evaluated = evaluated, []
                    _record_and_count(job_id, batch)
                    check_lookups.lookups_refresh(versions[position + 1 :])
        finally:
            if evaluated:
                _record_and_count(job_id, evaluated)


def _rechecked_ids(job: Revalidation, version_ids: list[int]) -> set[int]:
    """Of these versions, those the job has counted. Another job's results do not count:
    jobs under one policy version write the same result rows."""
    counted = RevalidatedVersion.objects.filter(job=job, version_id__in=version_ids)
    return set(counted.values_list("version_id", flat=True))


def _suspend(job: Revalidation, version: MemoryVersion, results: list[CheckResult]) -> bool:
    """Take a failing active item out of use (tenant setting ``suspend``), audited, its
    subject's cache bumped after commit — before the task returns."""
    if job.tenant.revalidation_failure != Tenant.RevalidationFailure.SUSPEND:
        return False
    MemoryItem.objects.select_for_update(no_key=True).get(pk=version.item_id)
    locked = (
        MemoryVersion.objects.select_for_update(of=("self",), no_key=True)
        .select_related("tenant", "item")
        .get(pk=version.pk)
    )
    if locked.status != Status.ACTIVE:
        return False  # superseded or retired meanwhile: nothing in use to suspend
    failed = [r.scenario.get("name", r.scenario_key) for r in results if r.outcome == "failed"]
    version_transition(
        version=locked,
        to=Status.CHECKS_FAILED,
        actor=ACTOR,
        reason=SUSPENDED_REASON,
        revalidation=job.pk,
        policy_version=job.policy_version,
        failed_scenarios=failed,
    )
    # Tasks told about it must re-verify before acting on it (as after a retirement).
    flag_tasks(item=locked.item, event="suspended", reason=SUSPENDED_REASON, at=timezone.now())
    bump_on_commit([locked])
    return True


def _finish_if_done(job: Revalidation) -> None:
    if job.done < job.total or job.status != Revalidation.Status.RUNNING:
        return
    job.status = Revalidation.Status.DONE
    job.finished_at = timezone.now()
    audit_append(
        tenant=job.tenant,
        actor=ACTOR,
        action="revalidation.finished",
        target_type="revalidation",
        target_id=job.pk,
        data={"total": job.total, "failed": job.failed, "flagged": job.flagged},
    )
    _announce_finished(job)


def _announce_finished(job: Revalidation) -> None:
    events.event_emit(
        tenant=job.tenant,
        event_type=events.REVALIDATION_FINISHED,
        data={
            "revalidation_id": job.pk,
            "status": str(job.status),
            "policy_version": job.policy_version,
            "reason": events.reason_text(job.reason),
            "total": job.total,
            "failed": job.failed,
            "flagged": list(job.flagged),
            "suspended": job.tenant.revalidation_failure == Tenant.RevalidationFailure.SUSPEND,
        },
    )


def _record_and_count(job_id: str, evaluated: list[checking.Checked]) -> None:
    with transaction.atomic(durable=True):
        job = (
            Revalidation.objects.select_for_update(of=("self",), no_key=True)
            .select_related("tenant")
            .defer(*_LIST_FIELDS)
            .get(pk=job_id)
        )
        # A concurrent delivery of the same chunk may have counted some meanwhile.
        counted = _rechecked_ids(job, [version.pk for version, *_ in evaluated])
        fresh = [e for e in evaluated if e[0].pk not in counted]
        recorded = checking.record_many(fresh, CheckResult.Run.REVALIDATION)
        RevalidatedVersion.objects.bulk_create(
            [RevalidatedVersion(job_id=job.pk, version_id=version.pk) for version, *_ in fresh]
        )
        failing: list[str] = []
        for (version, *_), results in zip(fresh, recorded, strict=True):
            if any(r.outcome == "failed" for r in results):
                failing.append(version.item_id)
                _suspend(job, version, results)
        job.done += len(fresh)
        job.progress_at = timezone.now()
        if failing:
            job.failed += len(failing)
            job.flagged = sorted({*job.flagged, *failing})
        _finish_if_done(job)
        job.save(update_fields=_PROGRESS_FIELDS)
        if failing:
            outbox_write(
                kind=OutboxKind.REVALIDATION_FAILURES,
                payload={"job_id": job.pk, "item_ids": failing},
                tenant=job.tenant,
            )
