"""The tamper-evident audit chain (the retrieval log lives in ``memory``)."""

from __future__ import annotations

from django.db import models

from core.models import Tenant


class AuditChainHead(models.Model):
    """One row per tenant, locked to serialize appends so the chain cannot fork.

    ``keyed_from`` is the first seq linked with a key (events before it keep their plain
    sha256 links), proven by ``seal``, an HMAC under the key ``seal_key_id`` names
    (docs/decisions/0019). Database defaults let a previous release's code, running
    beside this one during a rollout, still create heads and events."""

    tenant = models.OneToOneField(Tenant, on_delete=models.PROTECT, primary_key=True)
    last_seq = models.PositiveBigIntegerField(default=0)
    last_hash = models.CharField(max_length=64, default="0" * 64)
    keyed_from = models.PositiveBigIntegerField(null=True, blank=True)
    seal = models.CharField(max_length=64, db_default="", blank=True)
    seal_key_id = models.CharField(max_length=40, db_default="", blank=True)

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
    # The key whose HMAC ``hash`` is; empty for a plain sha256 link (before keying).
    key_id = models.CharField(max_length=40, db_default="", blank=True)

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
