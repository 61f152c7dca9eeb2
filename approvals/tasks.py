"""Celery tasks: thin, idempotent wrappers that take ids and call services.

Acknowledged late and rejected on worker loss (settings), so a killed worker's task is
redelivered; every task tolerates running twice."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from approvals import checking, notifications, revalidation
from approvals.models import Revalidation
from core import outbox
from core.errors import CacheUnavailable
from memory import erasure, retention, semantic
from memory.lifecycle import versions_expire
from memory.models import MemoryVersion, Status

logger = logging.getLogger(__name__)
STUCK_AFTER = timedelta(minutes=2)
REVALIDATION_STALLED_AFTER = timedelta(minutes=5)
ERASURE_STALLED_AFTER = timedelta(minutes=5)
EXPIRY_WARNINGS = (timedelta(days=7), timedelta(days=1))
# A transition refused because the cache's Redis could not be reached (nothing changed)
# is tried again, backing off; past that, the sweepers pick the work up.
CACHE_UNAVAILABLE_RETRIES = 8
EMBED_MISSING_FOR = 45.0  # seconds of one sweeper run, under beat's 60 s interval


@shared_task(acks_late=True)
def run_preview_checks(version_id: int) -> None:
    checking.preview(version_id)


@shared_task(
    acks_late=True,
    autoretry_for=(CacheUnavailable,),
    retry_backoff=True,
    max_retries=CACHE_UNAVAILABLE_RETRIES,
)
def run_gate_checks(version_id: int) -> str:
    return checking.gate(version_id)


@shared_task(acks_late=True)
def revalidation_run(job_id: str) -> int:
    """Started from the outbox after the job commits, and again by the stall sweeper."""
    return revalidation.revalidation_enqueue_missing(job_id=job_id)


@shared_task(
    acks_late=True,
    autoretry_for=(CacheUnavailable,),
    retry_backoff=True,
    max_retries=CACHE_UNAVAILABLE_RETRIES,
)
def revalidate_chunk(job_id: str, version_ids: list[int]) -> None:
    revalidation.revalidation_chunk(job_id=job_id, version_ids=version_ids)


@shared_task(acks_late=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def notify_pending_review(version_id: int) -> int:
    checking.previews_before_telling(version_id)
    return notifications.notify_pending_review(version_id)


@shared_task(acks_late=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def notify_held_mention(version_id: int) -> int:
    return notifications.notify_held_mention(version_id)


@shared_task(acks_late=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def notify_checks_failed(version_id: int) -> int:
    return notifications.notify_checks_failed(version_id)


@shared_task(acks_late=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def notify_retired(version_ids: list[int]) -> int:
    return notifications.notify_retired(version_ids)


@shared_task(acks_late=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def notify_revalidation_failures(job_id: str, item_ids: list[str]) -> None:
    """Owner and reviewers of each failing version of the job (suspended or flagged)."""
    job = Revalidation.objects.get(pk=job_id)
    versions = MemoryVersion.objects.filter(pk__in=job.version_ids, item_id__in=item_ids)
    chosen = versions.select_related("owner", "item", "tenant").order_by("pk")
    notifications.notify_revalidation_failures(job, list(chosen))


@shared_task
def sweep_stuck_checks() -> list[int]:
    """Re-enqueue gate runs lost between commit and enqueue, or with a dead worker."""
    stuck = checking.stuck_in_checking(STUCK_AFTER)
    for version_id in stuck:
        run_gate_checks.delay(version_id)
    return stuck


@shared_task
def sweep_outbox() -> list[int]:
    """Dispatch outbox rows a broker outage at commit left behind."""
    return outbox.outbox_sweep()


@shared_task
def resume_stalled_revalidations() -> list[str]:
    return revalidation.revalidation_resume_stalled(stalled_after=REVALIDATION_STALLED_AFTER)


@shared_task
def expire_due_memory() -> list[str]:
    return versions_expire(now=timezone.now())


@shared_task
def remind_pending_and_expiring() -> None:
    """Daily: reviewers get a reminder of what still waits; owners get expiry warnings."""
    now = timezone.now()
    waiting = MemoryVersion.objects.filter(
        status=Status.PENDING_REVIEW, status_changed_at__lte=now - timedelta(days=1)
    ).select_related("item", "tenant")
    notifications.remind_pending(list(waiting), now.date().isoformat())
    windows = []
    for ahead in EXPIRY_WARNINGS:
        due = MemoryVersion.objects.filter(
            status=Status.ACTIVE, expires_at__gt=now, expires_at__lte=now + ahead
        ).select_related("owner", "item", "tenant")
        windows.append((ahead.days, list(due)))
    notifications.warn_expiring(windows)


@shared_task(acks_late=True)
def erasure_run(erasure_id: str) -> str:
    """Started from the outbox after the erasure commits, and again by the stall sweeper;
    every batch is its own transaction, so a second delivery only finishes the rest."""
    try:
        return erasure.erasure_continue(erasure_id).status
    except Exception as exc:
        erasure.erasure_fail(erasure_id, f"{type(exc).__name__}: {exc}")
        raise


@shared_task
def resume_stalled_erasures() -> list[str]:
    stalled = erasure.stalled_erasures(stalled_after=ERASURE_STALLED_AFTER)
    for erasure_id in stalled:
        erasure_run.delay(erasure_id)
    return stalled


@shared_task(acks_late=True, autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def notify_erasure_done(erasure_id: str) -> bool:
    return notifications.notify_erasure_done(erasure_id)


@shared_task(acks_late=True)
def embed(version_ids: list[int], entity_ids: list[str]) -> int:
    """Vectors of newly recorded versions and entities (memory.semantic), after commit."""
    return semantic.embed_versions(version_ids) + semantic.embed_entities(entity_ids)


@shared_task
def embed_missing() -> int:
    """Beat, every minute: what has no vector of the configured model — all of it after
    the model changed — chunk by chunk for at most ``EMBED_MISSING_FOR``; the next run
    goes on where this one stopped (``manage.py embed --status`` shows how far)."""
    done, started = 0, time.monotonic()
    while time.monotonic() - started < EMBED_MISSING_FOR:
        written = semantic.embed_missing()
        done += written
        if written < semantic.CHUNK:
            break
    return done


@shared_task
def apply_retention() -> dict[str, dict[str, int]]:
    """Daily: each tenant's retention settings, in batches, audited once per tenant."""
    return retention.retention_run()
