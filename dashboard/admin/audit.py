"""Django admin for the audit chain, the retrieval log and erasures: read-only, always
(PostgreSQL also refuses UPDATE and DELETE on audit events; an erasure runs in its task)."""

from __future__ import annotations

from django.contrib import admin

from audit.models import AuditChainHead, AuditEvent
from dashboard.admin.approvals import ReadOnlyAdmin
from memory.models import Erasure, RetrievalRecord, RetrievalUse


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("tenant", "seq", "at", "actor", "action", "target_type", "target_id")
    list_filter = ("tenant", "action")
    search_fields = ("target_id", "actor", "action")


@admin.register(AuditChainHead)
class AuditChainHeadAdmin(ReadOnlyAdmin):
    tenant_path = None
    list_display = ("tenant", "last_seq", "last_hash")


@admin.register(RetrievalRecord)
class RetrievalRecordAdmin(ReadOnlyAdmin):
    list_display = ("id", "tenant", "task_id", "principal", "policy_version", "retrieved_at")
    search_fields = ("id", "task_id")


@admin.register(RetrievalUse)
class RetrievalUseAdmin(ReadOnlyAdmin):
    list_display = ("task_id", "item", "version_number", "field")
    search_fields = ("task_id", "item__id")


@admin.register(Erasure)
class ErasureAdmin(ReadOnlyAdmin):
    list_display = ("id", "subject", "status", "phase", "actor", "started_at", "finished_at")
    list_filter = ("status",)
    search_fields = ("id", "subject__id")
    list_select_related = ("subject",)
