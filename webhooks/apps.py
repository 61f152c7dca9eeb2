from django.apps import AppConfig

from core.kinds import OutboxKind

# Outbox kinds (core.outbox) this app carries out: memory.events writes ``webhook.event``
# in the transaction of each change; webhooks.services writes the disabled notice.
OUTBOX_HANDLERS = {
    OutboxKind.WEBHOOK_EVENT: "webhooks.tasks.fan_out_event",
    OutboxKind.WEBHOOK_DISABLED: "webhooks.tasks.notify_webhook_disabled",
}


class WebhooksConfig(AppConfig):
    name = "webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported in ready(): the tasks use models, which are loaded only now.
        import webhooks.tasks  # noqa: F401, PLC0415
        from core.metrics import scrape_reader  # noqa: PLC0415
        from core.outbox import outbox_handle  # noqa: PLC0415
        from memory.erasure_phases import erasure_phase  # noqa: PLC0415
        from webhooks.delivery import webhook_gauges  # noqa: PLC0415
        from webhooks.erasure import COUNTS, PHASE, redact_deliveries  # noqa: PLC0415

        for kind, task_name in OUTBOX_HANDLERS.items():
            outbox_handle(kind, task_name)
        # An erasure redacts the deliveries naming the subject (memory cannot import us).
        erasure_phase(PHASE, redact_deliveries, counts=COUNTS)
        scrape_reader("webhooks.deliveries", webhook_gauges)
