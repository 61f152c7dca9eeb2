"""The tamper-evident audit chain (the retrieval log lives in ``memory``)."""

from __future__ import annotations

from django.db import models

from core.models import Tenant


class AuditChainHead(models.Model):
    """One row per tenant, locked to serialize appends so the chain cannot fork."""

    tenant = models.OneToOneField(Tenant, on_delete=models.PROTECT, primary_key=True)
    last_seq = models.PositiveBigIntegerField(default=0)
    last_hash = models.CharField(max_length=64, default="0" * 64)

    def __str__(self) -> str:
        return f"{self.tenant_id}: {self.last_seq}"


class AuditEvent(models.Model):
    """Append-only; holds ids, statuses and digests, never personal content."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="audit_events")
    seq = models.PositiveBigIntegerField()
    at = models.DateTimeField()
    actor = models.CharField(max_length=150)
    action = models.CharField(max_length=60)
    target_type = models.CharField(max_length=30)
    target_id = models.CharField(max_length=60)
    data = models.JSONField(default=dict)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["tenant_id", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "seq"], name="audit_unique_seq"),
        ]
        indexes = [
            models.Index(fields=["tenant", "target_id"], name="audit_target"),
            models.Index(fields=["tenant", "action"], name="audit_action"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.action} {self.target_id}"
