"""The Celery app: ``celery -A config worker`` and ``celery -A config beat``."""

from __future__ import annotations

import os
import warnings
from typing import Any

from celery import Celery, signals
from celery.exceptions import CPendingDeprecationWarning
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# Webhook deliveries wait on receivers outside (up to MEMGOV_WEBHOOK_DEADLINE_SECONDS
# each): they have their own queue and, as deployed, their own worker, so a slow receiver
# never delays a gate run, an activation or a notification of any tenant. A worker started
# without -Q consumes both (tests, older command lines); deploy/ and make run start one
# worker per queue.
from operations.liveness import Heartbeat
from operations.queues import DEFAULT_QUEUE, QUEUES, WEBHOOK_QUEUE

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_default_queue=DEFAULT_QUEUE,
    # Each queue bound by its own name, not both by the default key "celery".
    task_queues=[Queue(name, routing_key=name) for name in QUEUES],
    task_routes={"webhooks.tasks.*": {"queue": WEBHOOK_QUEUE}},
    # A worker whose broker is gone waits for it however long it takes (Celery gives up
    # after 100 tries by default, about 50 minutes, and exits): a restart would not help.
    broker_connection_max_retries=None,
    # A task running when the broker goes away finishes (its ack is lost, so the broker
    # hands it out again after the visibility timeout, and its claim makes that a no-op),
    # rather than being killed mid-way, e.g. while posting a webhook. Set, so each
    # reconnection does not log Celery's multi-line notice about the default changing.
    worker_cancel_long_running_tasks_on_connection_loss=False,
)
warnings.filterwarnings(
    "ignore",
    message=r"\s*In Celery 5\.1 we introduced an optional breaking change",
    category=CPendingDeprecationWarning,
)
app.autodiscover_tasks()
# The heartbeat file the worker pods' probes read instead of a ping through the broker.
app.steps["worker"].add(Heartbeat)


@signals.worker_init.connect
@signals.beat_init.connect
def _same_redis_as_the_deployment(**_: Any) -> None:
    from core.deployment import check_redis_databases  # noqa: PLC0415 - apps load after this

    try:
        check_redis_databases()
    except ImproperlyConfigured as exc:  # Celery logs a handler's exception and goes on
        raise SystemExit(f"refusing to start: {exc}") from exc


@signals.worker_process_init.connect
def _embedding_model_in_the_background(**_: Any) -> None:
    """Each pool process loads semantic retrieval's model in the background as it starts,
    so the first embedding task does not hold the gate checks queued behind it."""
    from memory.embeddings import warm_up  # noqa: PLC0415 - apps load after this

    warm_up()


# Request ids in task headers, per-task log lines and metrics (after the app exists).
import operations.telemetry  # noqa: E402, F401 - signal handlers for request ids and task logs
