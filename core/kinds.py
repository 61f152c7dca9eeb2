"""The kinds of memory and the kinds of outbox side effects, each defined once for every
layer. A module of its own, free of models: app configs import the outbox kinds while
the models are still loading, and the resolver stays plain Python."""

from __future__ import annotations

from django.db import models


class MemoryKind(models.TextChoices):
    PREFERENCE = "preference"
    TASK_FACT = "task_fact"
    ENTERPRISE_RULE = "enterprise_rule"


class OutboxKind(models.TextChoices):
    """A side effect a write asks for after it commits (``core.outbox``). The layer that
    carries a kind out registers its task in its ``AppConfig.ready``."""

    GATE_CHECKS = "checks.gate"
    PREVIEW_CHECKS = "checks.preview"
    PENDING_REVIEW = "notify.pending_review"
    CHECKS_FAILED = "notify.checks_failed"
    RETIRED = "notify.retired"
    REVALIDATION_FAILURES = "notify.revalidation_failures"
    HELD_MENTION = "notify.held_mention"
    REVALIDATION_RUN = "revalidation.run"
    ERASURE_RUN = "erasure.run"
    ERASURE_DONE = "notify.erasure_done"
    WEBHOOK_EVENT = "webhook.event"
    WEBHOOK_DISABLED = "notify.webhook_disabled"
    EMBED = "semantic.embed"
