"""The Celery queues by name: here so that the metrics read them without importing the app."""

DEFAULT_QUEUE = "celery"
# Webhook deliveries wait on receivers outside; their own queue and worker (config.celery).
WEBHOOK_QUEUE = "webhooks"
QUEUES = (DEFAULT_QUEUE, WEBHOOK_QUEUE)
