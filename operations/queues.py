"""The Celery queues by name, here so that the metrics read them without importing the
app, and the folders of the embedded broker a local run uses instead of Redis."""

from pathlib import Path

from django.conf import settings

DEFAULT_QUEUE = "celery"
# Webhook deliveries wait on receivers outside; their own queue and worker (config.celery).
WEBHOOK_QUEUE = "webhooks"
QUEUES = (DEFAULT_QUEUE, WEBHOOK_QUEUE)


def prepare_embedded_broker() -> None:
    """The filesystem transport (``make run`` without Redis) needs its folders."""
    if not str(settings.CELERY_BROKER_URL).startswith("filesystem://"):
        return
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        Path(str(settings.CELERY_BROKER_TRANSPORT_OPTIONS[key])).mkdir(parents=True, exist_ok=True)
