"""What happens after a state change commits: Celery tasks enqueued with ``on_commit``,
never inside the transaction (a rollback must not leave a task or an email behind)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.db import transaction

from approvals.outbox import BROKER_DOWN
from memory.models import MemoryVersion, Status

if TYPE_CHECKING:
    from approvals.models import Revalidation

logger = logging.getLogger(__name__)


def enqueue(task: Any, *args: Any) -> None:
    """Send after commit; a broker outage must not turn a committed change into a 500.
    Lost gate runs are re-enqueued by the sweeper (versions stuck in ``checking``)."""

    def send() -> None:
        try:
            task.delay(*args)
        except BROKER_DOWN:
            logger.exception("could not enqueue %s%r; the sweeper will retry", task.name, args)

    transaction.on_commit(send)


def after_version_recorded(version: MemoryVersion) -> None:
    """A preference goes straight to its gate checks; anything for review gets a preview
    run (so the reviewer sees the impact) and its reviewers are told."""
    from approvals import tasks

    if version.status == Status.CHECKING:
        enqueue(tasks.run_gate_checks, version.pk)
    elif version.status == Status.PENDING_REVIEW:
        enqueue(tasks.run_preview_checks, version.pk)
        enqueue(tasks.notify_pending_review, version.pk)


def after_checks_requested(version: MemoryVersion) -> None:
    from approvals import tasks

    enqueue(tasks.run_gate_checks, version.pk)


def after_checks_failed(version: MemoryVersion) -> None:
    from approvals import tasks

    enqueue(tasks.notify_checks_failed, version.pk)


def after_retired(version_ids: list[int]) -> None:
    from approvals import tasks

    enqueue(tasks.notify_retired, version_ids)


def after_revalidation_failures(job: Revalidation, item_ids: list[str]) -> None:
    from approvals import tasks

    enqueue(tasks.notify_revalidation_failures, job.pk, item_ids)
