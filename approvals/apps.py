from django.apps import AppConfig

from core.kinds import OutboxKind

# Outbox kinds (core.outbox) this layer carries out, and the Celery task of each: lower
# layers write the kind; only this table knows the task.
OUTBOX_HANDLERS = {
    OutboxKind.GATE_CHECKS: "approvals.tasks.run_gate_checks",
    OutboxKind.PREVIEW_CHECKS: "approvals.tasks.run_preview_checks",
    OutboxKind.PENDING_REVIEW: "approvals.tasks.notify_pending_review",
    OutboxKind.CHECKS_FAILED: "approvals.tasks.notify_checks_failed",
    OutboxKind.RETIRED: "approvals.tasks.notify_retired",
    OutboxKind.REVALIDATION_FAILURES: "approvals.tasks.notify_revalidation_failures",
    OutboxKind.HELD_MENTION: "approvals.tasks.notify_held_mention",
    OutboxKind.REVALIDATION_RUN: "approvals.tasks.revalidation_run",
    OutboxKind.ERASURE_RUN: "approvals.tasks.erasure_run",
    OutboxKind.ERASURE_DONE: "approvals.tasks.notify_erasure_done",
    OutboxKind.EMBED: "approvals.tasks.embed",
}


class ApprovalsConfig(AppConfig):
    name = "approvals"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported in ready(): these modules use models, which are loaded only now. The
        # tasks are registered with the Celery app in every process (web too), so that an
        # outbox row can be handed to its task by name.
        import approvals.tasks  # noqa: F401, PLC0415
        from approvals.erasure import COUNTS, erase_reviews  # noqa: PLC0415
        from approvals.notifications import pending_review_gauges  # noqa: PLC0415
        from approvals.wording import status_reason_for  # noqa: PLC0415
        from core.metrics import scrape_reader  # noqa: PLC0415
        from core.outbox import outbox_handle  # noqa: PLC0415
        from memory.erasure_phases import erasure_versions_step  # noqa: PLC0415
        from memory.representations import reason_for_reader  # noqa: PLC0415

        for kind, task_name in OUTBOX_HANDLERS.items():
            outbox_handle(kind, task_name)
        # An erasure clears the reviews of the versions it erases (memory cannot import us).
        erasure_versions_step(erase_reviews, counts=COUNTS)
        # A status reason names no memory its reader may not see (memory cannot import us).
        reason_for_reader(status_reason_for)
        # /metrics reads the reviews waiting through us (operations.metrics imports no app).
        scrape_reader("approvals.pending_reviews", pending_review_gauges)
