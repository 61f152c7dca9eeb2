"""The tamper-evident audit chain and the retrieval log (kept apart: different volume)."""

from __future__ import annotations

from django.db import models

from memory.ids import new_retrieval_id
from memory.models import MemoryItem, Tenant


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


class RetrievalRecord(models.Model):
    """What a resolve with a ``task_id`` returned: the basis for re-verification."""

    id = models.CharField(primary_key=True, max_length=40, default=new_retrieval_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT)
    task_id = models.CharField(max_length=200)
    principal = models.CharField(max_length=150)
    policy_version = models.CharField(max_length=20)
    context = models.JSONField(default=dict)
    retrieved_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["tenant", "task_id"], name="retrieval_task")]

    def __str__(self) -> str:
        return self.id


class RetrievalUse(models.Model):
    """One version a retrieval used; indexed by item to find the tasks to flag on retire."""

    retrieval = models.ForeignKey(RetrievalRecord, on_delete=models.CASCADE, related_name="uses")
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT)
    task_id = models.CharField(max_length=200)
    item = models.ForeignKey(MemoryItem, on_delete=models.PROTECT)
    version_number = models.PositiveIntegerField()
    field = models.CharField(max_length=100)

    class Meta:
        indexes = [models.Index(fields=["tenant", "item"], name="retrievaluse_item")]

    def __str__(self) -> str:
        return f"{self.task_id} used {self.item_id} v{self.version_number}"
