"""Running scenario checks and concluding them: the services behind the Celery tasks."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from approvals import checks
from approvals.lifecycle import version_activate, version_fail_checks
from approvals.models import CheckResult, Revalidation
from approvals.permissions import require_tenant_permission
from audit.services import audit_append
from config import metrics
from memory.models import MemoryVersion, Policy, Status, Tenant
from memory.principals import Principal
from memory.selectors import current_policy, resolver_policy
from memory.services import MANAGE_POLICY_REFUSAL, policy_publish

logger = logging.getLogger(__name__)
ACTOR = "system:checks"


def _evaluate(version: MemoryVersion) -> tuple[str, datetime, list[checks.Outcome]]:
    policy = resolver_policy(current_policy(version.tenant))
    now = timezone.now()
    return policy.version, now, checks.run_all(version, policy, now)


def _record(
    version: MemoryVersion,
    run: str,
    policy_version: str,
    now: datetime,
    outcomes: list[checks.Outcome],
) -> list[CheckResult]:
    """Write one result per (version, run, scenario, policy) inside the caller's
    transaction — a second delivery of the same task rewrites the same rows."""
    results = []
    for outcome in outcomes:
        result, _ = CheckResult.objects.update_or_create(
            version=version,
            run=run,
            scenario_key=outcome.spec.key,
            policy_version=policy_version,
            defaults={
                "scenario": outcome.spec.as_dict(),
                "generated": outcome.spec.generated,
                "outcome": "passed" if outcome.passed else "failed",
                "detail": outcome.detail[:4000],
                "impact": outcome.impact,
                "ran_at": now,
            },
        )
        results.append(result)
    _pause_for_crash_tests(run)
    failed = sum(1 for r in results if r.outcome == "failed")
    audit_append(
        tenant=version.tenant,
        actor=ACTOR,
        action=f"checks.{run}",
        target_type="memory",
        target_id=version.item_id,
        data={
            "version": version.number,
            "policy_version": policy_version,
            "total": len(results),
            "failed": failed,
        },
    )
    return results


def _pause_for_crash_tests(run: str) -> None:
    """tests/integration kill a worker in the middle of a gate run (results written, not
    committed); this widens that window. Without MEMGOV_TEST_CHECK_DELAY it does nothing."""
    delay = os.environ.get("MEMGOV_TEST_CHECK_DELAY")
    if delay and run == CheckResult.Run.GATE:
        logger.warning("MEMGOV_TEST_CHECK_DELAY: gate run pauses %s s before commit", delay)
        time.sleep(float(delay))


def checks_run(*, version: MemoryVersion, run: str) -> tuple[str, list[CheckResult]]:
    """Evaluate every scenario and record the results in one transaction."""
    started = time.perf_counter()
    policy_version, now, outcomes = _evaluate(version)
    with transaction.atomic(durable=True):
        results = _record(version, run, policy_version, now, outcomes)
    passed = all(r.outcome == "passed" for r in results)
    metrics.check_run_finished(run, passed, time.perf_counter() - started)
    return policy_version, results


def preview(version_id: int) -> None:
    version = MemoryVersion.objects.select_related("tenant").get(pk=version_id)
    if version.subject_id is None or version.status not in (Status.PENDING_REVIEW, Status.CHECKING):
        return
    checks_run(version=version, run=CheckResult.Run.PREVIEW)


def gate(version_id: int) -> str:
    """Run the gate checks of a version in ``checking`` and activate it or fail it."""
    version = MemoryVersion.objects.select_related("tenant").get(pk=version_id)
    if version.status != Status.CHECKING:
        return version.status  # already concluded: a redelivery changes nothing
    _, results = checks_run(version=version, run=CheckResult.Run.GATE)
    failures = [r for r in results if r.outcome == "failed"]
    if failures:
        detail = "; ".join(f"{r.scenario['name']}: {r.detail}" for r in failures)[:2000]
        version_fail_checks(version_id=version_id, actor=ACTOR, detail=detail)
    else:
        version_activate(version_id=version_id, actor=ACTOR)
    version.refresh_from_db(fields=["status"])
    return version.status


def stuck_in_checking(older_than: timedelta) -> list[int]:
    """Versions whose gate run was lost (a crash between commit and enqueue, a dead worker)."""
    cutoff = timezone.now() - older_than
    return list(
        MemoryVersion.objects.filter(
            status=Status.CHECKING, status_changed_at__lt=cutoff
        ).values_list("pk", flat=True)
    )


def revalidation_start(*, tenant: Tenant, reason: str, actor: str) -> Revalidation:
    """Re-run the checks of every active item (the policy, model, prompt or tools changed)."""
    from approvals.dispatch import after_revalidation_started

    policy = current_policy(tenant)
    with transaction.atomic(durable=True):
        ids = list(
            MemoryVersion.objects.filter(tenant=tenant, status=Status.ACTIVE)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        job = Revalidation.objects.create(
            tenant=tenant,
            reason=reason,
            policy_version=str(policy.version),
            total=len(ids),
            started_by=actor,
            started_at=timezone.now(),
            status=Revalidation.Status.DONE if not ids else Revalidation.Status.RUNNING,
            finished_at=timezone.now() if not ids else None,
        )
        audit_append(
            tenant=tenant,
            actor=actor,
            action="revalidation.started",
            target_type="revalidation",
            target_id=job.pk,
            data={"total": len(ids), "policy_version": job.policy_version},
        )
        after_revalidation_started(job, ids)
    return job


def revalidation_chunk(*, job_id: str, version_ids: list[int]) -> None:
    """Re-run the checks of a chunk of active versions; count and flag the failures.

    Each version's results and its count commit together under the job's lock, so a
    chunk redelivered after a crash skips exactly the versions already counted."""
    job = Revalidation.objects.get(pk=job_id)
    for version in MemoryVersion.objects.filter(pk__in=version_ids).select_related("tenant"):
        if _rechecked(job, version):
            continue
        policy_version, now, outcomes = _evaluate(version)
        _record_and_count(job_id, version, policy_version, now, outcomes)


def _rechecked(job: Revalidation, version: MemoryVersion) -> bool:
    return CheckResult.objects.filter(
        version=version, run=CheckResult.Run.REVALIDATION, ran_at__gte=job.started_at
    ).exists()


def _record_and_count(
    job_id: str,
    version: MemoryVersion,
    policy_version: str,
    now: datetime,
    outcomes: list[checks.Outcome],
) -> None:
    from approvals.dispatch import after_revalidation_failures

    with transaction.atomic(durable=True):
        job = (
            Revalidation.objects.select_for_update(of=("self",), no_key=True)
            .select_related("tenant")
            .get(pk=job_id)
        )
        if _rechecked(job, version):
            return  # a concurrent delivery of the same chunk counted it
        results = _record(version, CheckResult.Run.REVALIDATION, policy_version, now, outcomes)
        failed = any(r.outcome == "failed" for r in results)
        job.done += 1
        if failed:
            job.failed += 1
            job.flagged = sorted({*job.flagged, version.item_id})
        if job.done >= job.total and job.status == Revalidation.Status.RUNNING:
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
        job.save()
        if failed:
            after_revalidation_failures(job, [version.item_id])


def policy_publish_and_revalidate(
    *, principal: Principal, precedence: Mapping[str, Any], reason: str
) -> tuple[Policy, Revalidation]:
    """A new policy is only trusted once every active item passed its checks under it."""
    policy = policy_publish(principal=principal, precedence=precedence, reason=reason)
    job = revalidation_start(
        tenant=principal.tenant,
        actor=principal.name,
        reason=f"policy {policy.version} published: {reason}",
    )
    return policy, job


def revalidation_request(*, principal: Principal, reason: str) -> Revalidation:
    """ "The model, prompt or tools changed": re-check every active item (manage_policy)."""
    require_tenant_permission(principal, "manage_policy", MANAGE_POLICY_REFUSAL)
    return revalidation_start(tenant=principal.tenant, actor=principal.name, reason=reason)
