"""Running scenario checks and concluding them: the services behind the Celery tasks."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from approvals import check_lookups, checks
from approvals.models import CheckResult
from audit.services import AuditEntry, audit_append_many
from core import metrics
from core.sql import bound_on_server
from memory.lifecycle import version_activate, version_fail_checks
from memory.models import MemoryVersion, Status
from memory.selectors import current_policy, resolver_policy

logger = logging.getLogger(__name__)
ACTOR = "system:checks"


def evaluate_current(version: MemoryVersion) -> tuple[str, datetime, list[checks.ScenarioOutcome]]:
    policy = check_lookups.current_resolver_policy(version.tenant)
    now = timezone.now()
    return policy.version, now, checks.run_all(version, policy, now)


def impact_now(version: MemoryVersion) -> list[checks.ContextImpact]:
    """What activation changes per context, asked now under the current policy (the item
    page shows it live; the checks store the same comparison with ids only)."""
    if version.subject_id is None:
        return []
    policy = resolver_policy(current_policy(version.tenant))
    return checks.impact(version, policy, timezone.now())


def impact_now_seen_by(
    version: MemoryVersion, label_sets: list[frozenset[str] | None]
) -> list[list[checks.ContextImpact]]:
    """``impact_now`` as agents asking with each set of labels are told it (None: every
    label the version needs), one list per set in the order given."""
    if version.subject_id is None:
        return [[] for _ in label_sets]
    policy = resolver_policy(current_policy(version.tenant))
    return checks.impact_seen_by(version, policy, timezone.now(), label_sets)


def record_results(
    version: MemoryVersion,
    run: str,
    policy_version: str,
    now: datetime,
    outcomes: list[checks.ScenarioOutcome],
) -> list[CheckResult]:
    """Write one result per (version, run, scenario, policy) inside the caller's
    transaction — a second delivery of the same task rewrites the same rows."""
    return record_many([(version, policy_version, now, outcomes)], run)[0]


# A version, the policy version and instant it was checked under, and its outcomes.
Checked = tuple[MemoryVersion, str, datetime, list[checks.ScenarioOutcome]]


def record_many(runs: list[Checked], run: str, *, complete: bool = True) -> list[list[CheckResult]]:
    """``record_results`` for several versions: one upsert of every result (on the
    unique (version, run, scenario, policy)) and one chained audit append, instead of
    a lookup, a savepoint and a write per scenario and three writes per version.

    A ``complete`` run replaces the results of the previous run of its kind and policy:
    a scenario it no longer asks (the tie it checked was retired, a custom scenario was
    removed) is deleted, so the stored results are one run's, never two runs' mixed
    (issue 43: "active · all passed" beside "1 of 8 failed")."""
    per_version: list[list[CheckResult]] = []
    rows: dict[tuple[int, str, str], CheckResult] = {}
    events = []
    for version, policy_version, now, outcomes in runs:
        results = [_result(version, run, policy_version, now, outcome) for outcome in outcomes]
        for result in results:  # a key met twice is written once, the last one winning
            rows[(version.pk, result.scenario_key, policy_version)] = result
        per_version.append(results)
        events.append(
            AuditEntry(
                actor=ACTOR,
                action=f"checks.{run}",
                target_type="memory",
                target_id=version.item_id,
                data={
                    "version": version.number,
                    "policy_version": policy_version,
                    "total": len(results),
                    "failed": sum(1 for r in results if r.outcome == "failed"),
                },
            )
        )
    if complete and runs:
        stale = Q()
        for version, policy_version, _, outcomes in runs:
            stale |= Q(version=version, run=run, policy_version=policy_version) & ~Q(
                scenario_key__in=[outcome.spec.key for outcome in outcomes]
            )
        CheckResult.objects.filter(stale).delete()
    if rows:
        with bound_on_server():
            CheckResult.objects.bulk_create(
                list(rows.values()),
                update_conflicts=True,
                unique_fields=["version", "run", "scenario_key", "policy_version"],
                update_fields=["scenario", "generated", "outcome", "detail", "impact", "ran_at"],
            )
    if runs:
        audit_append_many(tenant=runs[0][0].tenant, events=events)
    return per_version


def _result(
    version: MemoryVersion,
    run: str,
    policy_version: str,
    now: datetime,
    outcome: checks.ScenarioOutcome,
) -> CheckResult:
    return CheckResult(
        version=version,
        run=run,
        scenario_key=outcome.spec.key,
        policy_version=policy_version,
        scenario=outcome.spec.as_dict(),
        generated=outcome.spec.generated,
        outcome="passed" if outcome.passed else "failed",
        detail=outcome.detail[:4000],
        impact=outcome.impact,
        ran_at=now,
    )


def checks_run(*, version: MemoryVersion, run: str) -> tuple[str, list[CheckResult]]:
    """Evaluate every scenario and record the results in one transaction."""
    started = time.perf_counter()
    policy_version, now, outcomes = evaluate_current(version)
    with transaction.atomic(durable=True):
        results = record_results(version, run, policy_version, now, outcomes)
    passed = all(r.outcome == "passed" for r in results)
    metrics.check_run_finished(run, passed, time.perf_counter() - started)
    return policy_version, results


# At most this many previews run before one email (a burst of proposals): the digest lists
# the oldest first, and the rest run as the outbox asks.
DIGEST_PREVIEWS = 200


def preview(version_id: int) -> None:
    version = MemoryVersion.objects.select_related("tenant").get(pk=version_id)
    if version.subject_id is None or version.status not in (Status.PENDING_REVIEW, Status.CHECKING):
        return
    checks_run(version=version, run=CheckResult.Run.PREVIEW)


def previews_before_telling(version_id: int) -> None:
    """The previews a pending-review email reports, run first where none ran yet: this
    version's and those of the tenant's other versions in review the digest may list
    (issue 43, point 12), so no email says "not finished yet". The runs the outbox asks
    for as well rewrite the same rows."""
    tenant_id = MemoryVersion.objects.filter(pk=version_id).values_list("tenant_id", flat=True)
    unpreviewed = (
        MemoryVersion.objects.filter(
            tenant_id__in=tenant_id, status=Status.PENDING_REVIEW, subject_id__isnull=False
        )
        .exclude(checks__run=CheckResult.Run.PREVIEW)
        .order_by("recorded_at")
        .values_list("pk", flat=True)[:DIGEST_PREVIEWS]
    )
    for pk in list(unpreviewed):
        preview(pk)


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
        version_activate(version_id=version_id, actor=ACTOR, regression=regression_under_lock)
    version.refresh_from_db(fields=["status"])
    return version.status


def regression_under_lock(version: MemoryVersion) -> str | None:
    """The regression scenarios again, inside the activation's lock and transaction: an
    item of the same field activated since the gate run is seen now. Returns the failure
    (recorded as the gate's result) or None."""
    policy = resolver_policy(current_policy(version.tenant))
    now = timezone.now()
    specs = [s for s in checks.generated_specs(version, now) if s.kind == "regression"]
    pool = check_lookups.pool_for(version)
    outcomes = [checks.evaluate(version, spec, policy, now, pool) for spec in specs]
    failed = [o for o in outcomes if not o.passed]
    if not failed:
        return None
    # Only the regression scenarios were asked again: the gate run's other results stay.
    record_many([(version, policy.version, now, outcomes)], CheckResult.Run.GATE, complete=False)
    return "regression: " + "; ".join(f"{o.spec.name}: {o.detail}" for o in failed)[:2000]


def stuck_in_checking(older_than: timedelta) -> list[int]:
    """Versions whose gate run was lost (a crash between commit and enqueue, a dead worker)."""
    cutoff = timezone.now() - older_than
    return list(
        MemoryVersion.objects.filter(
            status=Status.CHECKING, status_changed_at__lt=cutoff
        ).values_list("pk", flat=True)
    )
