"""The three layers (source, memory item, resolution input), policy and the retrieval log.

Versions are immutable; what changes is their ``status`` and system times, and only
through ``memory.services`` / ``approvals.services`` transitions.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from core.ids import (
    new_entity_id,
    new_erasure_id,
    new_memory_id,
    new_retrieval_id,
    new_source_id,
)
from core.kinds import MemoryKind
from core.models import Tenant


class Entity(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=new_entity_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="entities")
    kind = models.CharField(max_length=50)
    name = models.CharField(max_length=200)
    name_normalized = models.CharField(max_length=200, help_text="casefolded, for matching")
    external_ref = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Set when an erasure starts: the name is a tombstone, resolve answers 410 ``erased``.
    erased_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "entities"
        indexes = [
            models.Index(fields=["tenant", "name_normalized"], name="entity_tenant_name"),
            # An agent matches a subject by the id another system gives it.
            models.Index(fields=["tenant", "external_ref"], name="entity_tenant_external_ref"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"


class Alias(models.Model):
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="aliases")
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT)
    alias = models.CharField(max_length=200)
    normalized = models.CharField(max_length=200)
    source = models.ForeignKey("Source", null=True, blank=True, on_delete=models.PROTECT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "aliases"
        constraints = [
            models.UniqueConstraint(fields=["entity", "normalized"], name="alias_unique_per_entity")
        ]
        indexes = [models.Index(fields=["tenant", "normalized"], name="alias_tenant_normalized")]

    def __str__(self) -> str:
        return self.alias


class Source(models.Model):
    class Kind(models.TextChoices):
        MESSAGE = "message"
        BUSINESS_RECORD = "business_record"
        APPROVAL_RECORD = "approval_record"
        DOCUMENT = "document"

    id = models.CharField(primary_key=True, max_length=40, default=new_source_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="sources")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    # None (purged by retention) is not "" (said nothing): the digest still proves what it was.
    content = models.TextField(null=True, blank=True)  # noqa: DJ001
    content_sha256 = models.CharField(max_length=64)
    external_ref = models.CharField(max_length=200, blank=True)
    version = models.CharField(max_length=50, blank=True)
    speaker = models.CharField(max_length=200, blank=True)
    occurred_at = models.DateTimeField(null=True, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)
    visibility = models.JSONField(default=list)
    metadata = models.JSONField(default=dict, blank=True)
    recorded_by = models.CharField(max_length=150)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                name="source_kind_valid",
                condition=Q(kind__in=["message", "business_record", "approval_record", "document"]),
            )
        ]

    def __str__(self) -> str:
        return self.id


class Status(models.TextChoices):
    HELD_UNRESOLVED = "held_unresolved"
    PENDING_REVIEW = "pending_review"
    CHECKING = "checking"
    CHECKS_FAILED = "checks_failed"
    ACTIVE = "active"
    REJECTED = "rejected"
    SUPERSEDED = "superseded"
    RETIRED = "retired"
    EXPIRED = "expired"


# A version in one of these may still become active: a correction of it supersedes it.
OPEN_STATUSES = (
    Status.HELD_UNRESOLVED,
    Status.PENDING_REVIEW,
    Status.CHECKING,
    Status.CHECKS_FAILED,
)


class Verification(models.TextChoices):
    ASSERTED = "asserted"
    CONFIRMED = "confirmed"
    VERIFIED_RECORD = "verified_record"


class Assertion(models.TextChoices):
    STATE = "state"
    PLAN = "plan"


class MemoryItem(models.Model):
    """A lineage: kind, subject and field are fixed; content lives in its versions."""

    id = models.CharField(primary_key=True, max_length=40, default=new_memory_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="memory_items")
    kind = models.CharField(max_length=20, choices=MemoryKind.choices)
    subject = models.ForeignKey(
        Entity, null=True, blank=True, on_delete=models.PROTECT, related_name="memory_items"
    )
    subject_mention = models.CharField(max_length=200, blank=True)
    field = models.CharField(max_length=100)
    head_version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "subject", "field"], name="item_subject_field")]

    def __str__(self) -> str:
        return self.id


class MemoryVersion(models.Model):
    item = models.ForeignKey(MemoryItem, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    # Copied from the lineage so the resolver's lookup is one index scan on one table.
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=20, choices=MemoryKind.choices)
    subject = models.ForeignKey(
        Entity, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    field = models.CharField(max_length=100)

    value = models.JSONField(null=True)
    statement = models.TextField()
    scope = models.JSONField(default=dict)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    proposed_by = models.CharField(max_length=150)
    proposer_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    expires_at = models.DateTimeField(null=True, blank=True)
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_to = models.DateTimeField(null=True, blank=True)
    assertion = models.CharField(max_length=8, choices=Assertion.choices, default=Assertion.STATE)
    verification = models.CharField(
        max_length=20, choices=Verification.choices, default=Verification.ASSERTED
    )
    sources = models.ManyToManyField(Source, related_name="memory_versions")
    source_ids = models.JSONField(default=list, help_text="Denormalized, immutable copy.")
    required_visibility = models.JSONField(
        default=list, help_text="Label sets a caller must satisfy: each source's and the item's."
    )
    basis = models.JSONField(default=dict, blank=True)
    visibility = models.JSONField(default=list, blank=True)
    required_reviewers = models.JSONField(default=list, blank=True)
    approvals_required = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=20, choices=Status.choices)
    status_reason = models.TextField(blank=True)
    status_changed_at = models.DateTimeField()
    recorded_at = models.DateTimeField()
    activated_at = models.DateTimeField(null=True, blank=True)
    deactivated_at = models.DateTimeField(null=True, blank=True)
    # When ``value`` and ``statement`` were purged (erasure or retention); the digests in
    # the audit trail still prove what they were.
    erased_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["item_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["item", "number"], name="version_unique_number"),
            models.UniqueConstraint(
                fields=["item"], condition=Q(status="active"), name="version_one_active_per_item"
            ),
            models.CheckConstraint(
                name="version_status_valid", condition=Q(status__in=Status.values)
            ),
            models.CheckConstraint(
                name="version_kind_valid", condition=Q(kind__in=MemoryKind.values)
            ),
            models.CheckConstraint(
                name="version_assertion_valid", condition=Q(assertion__in=Assertion.values)
            ),
            models.CheckConstraint(
                name="version_verification_valid",
                condition=Q(verification__in=Verification.values),
            ),
            models.CheckConstraint(
                name="version_valid_interval",
                condition=Q(valid_from__isnull=True)
                | Q(valid_to__isnull=True)
                | Q(valid_from__lte=models.F("valid_to")),
            ),
            models.CheckConstraint(
                name="version_active_has_activation",
                condition=~Q(status="active") | Q(activated_at__isnull=False),
            ),
        ]
        indexes = [
            # The resolver's lookup: versions of a subject and field in use.
            models.Index(
                fields=["tenant", "subject", "field", "status"], name="version_resolve_lookup"
            ),
            models.Index(fields=["tenant", "status", "recorded_at"], name="version_queue"),
            models.Index(fields=["status", "expires_at"], name="version_expiry"),
        ]

    def __str__(self) -> str:
        return f"{self.item_id} v{self.number}"

    @property
    def memory_id(self) -> str:
        return self.item_id


class EntityReference(models.Model):
    """A version's value names another entity (``{"entity": "ent_…"}`` anywhere in it): the
    fact is one record, listed and found through its subject and each entity it references,
    and erased with either (seed 000: one fact discoverable through each entity)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    version = models.ForeignKey(
        MemoryVersion, on_delete=models.CASCADE, related_name="entity_references"
    )
    entity = models.ForeignKey(Entity, on_delete=models.PROTECT, related_name="references")
    # Where in the value, as a JSON pointer ("" is the value itself, "/contact" a member).
    path = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["version", "entity", "path"], name="entityreference_unique"
            )
        ]
        indexes = [models.Index(fields=["tenant", "entity"], name="entityreference_entity")]

    def __str__(self) -> str:
        return f"{self.version} → {self.entity_id}"


class Scenario(models.Model):
    """A custom scenario written by a proposer or reviewer from a real case."""

    class Kind(models.TextChoices):
        APPLICABLE = "applicable"
        INAPPLICABLE = "inapplicable"
        REVOKED = "revoked"

    class Expect(models.TextChoices):
        APPLIES = "applies"
        DOES_NOT_APPLY = "does_not_apply"

    version = models.ForeignKey(MemoryVersion, on_delete=models.CASCADE, related_name="scenarios")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    context = models.JSONField(default=dict)
    valid_at = models.DateTimeField(null=True, blank=True)
    expect = models.CharField(max_length=20, choices=Expect.choices)
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} {self.context} → {self.expect}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "context": self.context,
            "valid_at": (
                self.valid_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
                if self.valid_at
                else None
            ),
            "expect": self.expect,
        }


class Policy(models.Model):
    """One published precedence configuration; the newest version per tenant is current."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="policies")
    version = models.PositiveIntegerField()
    precedence = models.JSONField()
    reason = models.TextField(blank=True)
    published_by = models.CharField(max_length=150)
    published_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "policies"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "version"], name="policy_unique_version")
        ]

    def __str__(self) -> str:
        return f"{self.tenant} policy {self.version}"


class TaskFlag(models.Model):
    """A task that used a version which later stopped being true: re-verify before acting."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT)
    task_id = models.CharField(max_length=200)
    item = models.ForeignKey(MemoryItem, on_delete=models.PROTECT)
    version_number = models.PositiveIntegerField()
    event = models.CharField(max_length=20)
    reason = models.TextField(blank=True)
    at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "task_id", "item", "version_number", "event"],
                name="taskflag_unique",
            )
        ]
        indexes = [models.Index(fields=["tenant", "task_id"], name="taskflag_task")]

    def __str__(self) -> str:
        return f"{self.task_id}: {self.item_id} {self.event}"


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
        db_table = "audit_retrievalrecord"
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
        db_table = "audit_retrievaluse"
        indexes = [models.Index(fields=["tenant", "item"], name="retrievaluse_item")]

    def __str__(self) -> str:
        return f"{self.task_id} used {self.item_id} v{self.version_number}"


class Erasure(models.Model):
    """One erasure of a subject (docs/design.md, Retention and erasure): its progress, counts
    and kept sources live here, each batch updating them in the transaction of its change,
    so a worker killed at any point resumes without counting anything twice."""

    class Status(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    id = models.CharField(primary_key=True, max_length=40, default=new_erasure_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT)
    subject = models.ForeignKey(Entity, on_delete=models.PROTECT, related_name="erasures")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor = models.CharField(max_length=150)
    reason = models.TextField()
    # A digest of the former name: the audit tombstone proves which name was erased.
    name_sha256 = models.CharField(max_length=64)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.RUNNING)
    phase = models.CharField(max_length=20, default="versions")
    cursor = models.CharField(max_length=64, blank=True)
    counts = models.JSONField(default=dict)
    kept = models.JSONField(default=list)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField()
    progress_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                name="erasure_status_valid", condition=Q(status__in=["running", "done", "failed"])
            )
        ]

    def __str__(self) -> str:
        return self.id


class FieldDefinition(models.Model):
    """The tenant's catalog entry for one field (docs/api.md, Field catalog): what its value
    must look like, which kinds and scope dimensions it takes, its default expiry, and the
    system of record that holds the committed state (then memory is only advisory)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    value_schema = models.JSONField(default=dict, blank=True)
    kinds = models.JSONField(default=list, blank=True, help_text="Empty: every kind.")
    required_scope = models.JSONField(default=list, blank=True)
    default_expiry_days = models.PositiveIntegerField(null=True, blank=True)
    authority_name = models.CharField(max_length=200, blank=True)
    authority_url = models.CharField(max_length=2000, blank=True)
    authority_tool = models.CharField(max_length=200, blank=True)
    updated_by = models.CharField(max_length=150)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="field_unique_per_tenant")
        ]

    def __str__(self) -> str:
        return self.name


class Clarification(models.Model):
    """A question a held proposal asks before anyone can review it: which entity a subject
    mention means, or which value a referent ("there") stands for. Answered by the
    proposer or a reviewer (``POST /memories/{id}/clarify``)."""

    class Member(models.TextChoices):
        SUBJECT = "subject"
        VALUE = "value"

    version = models.ForeignKey(
        MemoryVersion, on_delete=models.CASCADE, related_name="clarifications"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    member = models.CharField(max_length=10, choices=Member.choices)
    mention = models.CharField(max_length=200)
    question = models.TextField()
    # [{"id": "ent_…" | "opt_1", "label": "…", "value": … (value options), "memory_id",
    #   "version" (the number the value was copied from; not shown)}]
    options = models.JSONField(default=list)
    asked_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)
    answered_by = models.CharField(max_length=150, blank=True)
    choice = models.CharField(max_length=40, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["version", "member"], name="clarification_one_per_member"
            )
        ]

    def __str__(self) -> str:
        return f"{self.version} {self.member}: {self.mention}"


class Embedding(models.Model):
    """The vector of a version's or an entity's text, made by one model (memory.semantic).

    The vector is a column this model does not declare, since its type depends on what
    the database can do: ``vector`` on PostgreSQL with pgvector, a float32 BLOB that
    sqlite-vec reads on SQLite; ``memory.semantic.ensure_store`` adds it where it can.
    Without it the rows are never written and search is lexical (docs/operations.md)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    version = models.ForeignKey(
        MemoryVersion, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    entity = models.ForeignKey(
        Entity, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    model = models.CharField(max_length=200)
    digest = models.CharField(max_length=64, help_text="sha256 of the text embedded")
    embedded_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(
                name="embedding_of_one_thing",
                condition=Q(version__isnull=True, entity__isnull=False)
                | Q(version__isnull=False, entity__isnull=True),
            ),
            models.UniqueConstraint(
                fields=["version", "model"],
                condition=Q(version__isnull=False),
                name="embedding_one_per_version_model",
            ),
            models.UniqueConstraint(
                fields=["entity", "model"],
                condition=Q(entity__isnull=False),
                name="embedding_one_per_entity_model",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "model"], name="embedding_tenant_model")]

    def __str__(self) -> str:
        return f"{self.version_id or self.entity_id} ({self.model})"
