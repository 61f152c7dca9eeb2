"""A tenant's webhook endpoints, the deliveries of events to them, and each attempt.

A delivery is one event for one endpoint: its body is fixed when it is created (the
signature covers those exact bytes), its ``webhook-id`` is the event id on every attempt,
and it is claimed with a conditional update before each attempt, so a retry scheduled
twice (countdown and sweeper) is attempted once."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from core.ids import new_delivery_id, new_webhook_id
from core.models import Tenant


class WebhookEndpoint(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        DISABLED = "disabled"  # gave up after 24 hours of failures; the owner was told

    id = models.CharField(primary_key=True, max_length=40, default=new_webhook_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="webhooks")
    url = models.CharField(max_length=2000)
    description = models.CharField(max_length=500, blank=True)
    events = models.JSONField(default=list)
    # Kept retrievable (it signs every delivery) and shown to people only once.
    secret = models.CharField(max_length=100)
    previous_secret = models.CharField(max_length=100, blank=True)
    previous_secret_until = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.ACTIVE)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField()
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["tenant"],
                condition=Q(status="active", deleted_at__isnull=True),
                name="webhook_active_per_tenant",
            )
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["active", "disabled"]), name="webhook_status_valid"
            )
        ]

    def __str__(self) -> str:
        return f"{self.id} → {self.url}"


class WebhookDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"
        # Its endpoint is disabled: kept, unsent, until the endpoint is re-enabled (then
        # pending again) or for MEMGOV_WEBHOOK_HELD_RETENTION_SECONDS (then failed).
        HELD = "held"

    id = models.CharField(primary_key=True, max_length=40, default=new_delivery_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT)
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event_id = models.CharField(max_length=40)
    event_type = models.CharField(max_length=40)
    body = models.TextField(help_text="The exact JSON sent and signed.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    # A held delivery released by re-enabling its endpoint gets a new retry window from
    # then, counting only the attempts made since (webhooks/delivery.py, _record).
    released_at = models.DateTimeField(null=True, blank=True)
    attempts_before_release = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            # An event fanned out twice (at-least-once tasks) is still one delivery.
            models.UniqueConstraint(fields=["endpoint", "event_id"], name="delivery_once"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "delivered", "failed", "held"]),
                name="delivery_status_valid",
            ),
        ]
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status="pending"),
                name="delivery_due",
            ),
            # A tenant's turn (webhooks/delivery.py): its oldest due deliveries, and the
            # attempts it has claimed (a few rows: a claim ends with its attempt).
            models.Index(
                fields=["tenant", "next_attempt_at"],
                condition=Q(status="pending"),
                name="delivery_due_per_tenant",
            ),
            models.Index(
                fields=["tenant", "claimed_until"],
                condition=Q(status="pending", claimed_until__isnull=False),
                name="delivery_claimed_per_tenant",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} → {self.endpoint_id} ({self.status})"


class WebhookAttempt(models.Model):
    """One POST of a delivery: the log the API and the dashboard show."""

    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log"
    )
    number = models.PositiveSmallIntegerField()
    at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField()
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="attempt_once")]

    def __str__(self) -> str:
        return f"{self.delivery_id} #{self.number}: {self.status_code or self.error}"
