"""The ground floor: tenants, people's membership, API keys, scope values with the guardian
object permissions granted on them, idempotency records and the
transactional outbox. Every other app builds on these; nothing here imports from them.

The models keep the tables they had in ``memory``/``approvals`` (``db_table``), so moving
them here changed no schema (migrations ``core.0001`` and the state-only moves)."""

from __future__ import annotations

import uuid
from zoneinfo import ZoneInfo, available_timezones

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase

TENANT_PERMISSIONS = (
    ("review_task_fact", "Review task facts"),
    ("review_enterprise_rule", "Review enterprise rules"),
    ("approve_tenant_wide_rule", "Approve tenant-wide rules"),
    ("retire_memory", "Retire memory and revoke sources"),
    ("manage_policy", "Manage the resolution policy"),
    ("view_audit", "View the audit trail"),
    ("manage_webhooks", "Manage the tenant's webhook endpoints"),
    ("erase_subject", "Export and erase what is held about a subject"),
    # With is_staff: the tenant's own Django admin (rows of this tenant only, no editing).
    ("tenant_admin", "Administer the tenant in the Django admin"),
)
GRANTABLE_PERMISSIONS = frozenset(codename for codename, _ in TENANT_PERMISSIONS)


def validate_time_zone(name: str) -> None:
    """An IANA zone name ("Europe/Berlin"); anything else would fail at render time."""
    if name not in available_timezones():
        raise ValidationError(f"{name!r} is not an IANA time zone name such as Europe/Berlin.")


class Tenant(models.Model):
    class RevalidationFailure(models.TextChoices):
        SUSPEND = "suspend"  # an item failing revalidation leaves use until rechecked
        FLAG = "flag"  # it stays active; the job only lists it

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    approvals_required = models.PositiveSmallIntegerField(
        default=2, help_text="Distinct approvals an enterprise rule needs."
    )
    # Retention (docs/design.md, Retention and erasure): empty keeps forever.
    source_content_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="Purge source content this many days after receipt."
    )
    retrieval_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="Delete retrieval records older than this."
    )
    inactive_version_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="Purge values of versions retired or expired this long."
    )
    revalidation_failure = models.CharField(
        max_length=8,
        choices=RevalidationFailure.choices,
        default=RevalidationFailure.SUSPEND,
        help_text="What happens to an active item that fails revalidation.",
    )
    time_zone = models.CharField(
        max_length=64,
        default="UTC",
        validators=[validate_time_zone],
        help_text="IANA zone in which the dashboard and emails show times to people.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "memory_tenant"
        permissions = TENANT_PERMISSIONS
        constraints = [
            models.CheckConstraint(
                condition=Q(revalidation_failure__in=["suspend", "flag"]),
                name="tenant_revalidation_failure_valid",
            )
        ]

    def __str__(self) -> str:
        return self.slug

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.time_zone)


class Membership(models.Model):
    """A person's place in one tenant, with the visibility labels that person holds."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="membership"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="memberships")
    labels = models.JSONField(default=list, blank=True)

    class Meta:
        db_table = "memory_membership"

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant}"


class ApiKey(models.Model):
    class Principal(models.TextChoices):
        AGENT = "agent"
        USER = "user"

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="api_keys")
    prefix = models.CharField(max_length=16, unique=True, help_text="Lookup part, not secret.")
    key_hash = models.CharField(max_length=64, help_text="sha256 of the whole key.")
    principal = models.CharField(max_length=8, choices=Principal.choices)
    agent_name = models.CharField(max_length=100, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    labels = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Refused from this moment; empty: never expires."
    )
    lifetime = models.DurationField(
        null=True, blank=True, help_text="How long the key lives; a rotation keeps it."
    )

    class Meta:
        db_table = "memory_apikey"
        constraints = [
            models.CheckConstraint(
                name="apikey_principal_has_identity",
                condition=(Q(principal="agent") & ~Q(agent_name="") & Q(user__isnull=True))
                | (Q(principal="user") & Q(user__isnull=False)),
            )
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.principal_name})"

    @property
    def principal_name(self) -> str:
        if self.principal == self.Principal.AGENT:
            return f"agent:{self.agent_name}"
        assert self.user is not None  # noqa: S101 - guaranteed by the check constraint
        return f"user:{self.user.get_username()}"


class ScopeValue(models.Model):
    """A value seen for a scope dimension in a tenant: target of scoped review authority and
    the source of sibling values for inapplicable scenario checks."""

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="scope_values")
    dimension = models.CharField(max_length=32)
    value = models.CharField(max_length=200)

    class Meta:
        db_table = "memory_scopevalue"
        permissions = TENANT_PERMISSIONS
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "dimension", "value"], name="scopevalue_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.dimension}={self.value}"


class TenantUserObjectPermission(UserObjectPermissionBase):
    content_object = models.ForeignKey(Tenant, on_delete=models.CASCADE)

    class Meta(UserObjectPermissionBase.Meta):
        db_table = "approvals_tenantuserobjectpermission"


class TenantGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(Tenant, on_delete=models.CASCADE)

    class Meta(GroupObjectPermissionBase.Meta):
        db_table = "approvals_tenantgroupobjectpermission"


class ScopeValueUserObjectPermission(UserObjectPermissionBase):
    content_object = models.ForeignKey(ScopeValue, on_delete=models.CASCADE)

    class Meta(UserObjectPermissionBase.Meta):
        db_table = "approvals_scopevalueuserobjectpermission"


class ScopeValueGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(ScopeValue, on_delete=models.CASCADE)

    class Meta(GroupObjectPermissionBase.Meta):
        db_table = "approvals_scopevaluegroupobjectpermission"


class IdempotencyRecord(models.Model):
    """Keys are scoped per caller: another caller's key is never seen, not even as used.
    ``principal`` names the caller: ``key:<id>`` for an API key (two keys may share an agent
    name, not labels), ``user:<name>`` for a dashboard session."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE)
    principal = models.CharField(max_length=150, default="")
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField()
    response_body = models.JSONField()
    response_headers = models.JSONField(default=dict)
    created_at = models.DateTimeField()

    class Meta:
        db_table = "memory_idempotencyrecord"
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "principal", "key"], name="idempotency_unique_principal_key"
            )
        ]

    def __str__(self) -> str:
        return self.key


class Outbox(models.Model):
    """A side effect recorded in the transaction of the write that causes it, dispatched
    after commit; the sweeper re-dispatches rows a broker outage left behind (docs/design.md,
    Side effects after commit). ``kind`` names a handler in ``core.outbox``."""

    kind = models.CharField(max_length=64)
    payload = models.JSONField(default=dict)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, null=True, blank=True)
    created_at = models.DateTimeField()
    claimed_until = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)

    class Meta:
        db_table = "approvals_outbox"
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(
                fields=["created_at"],
                condition=models.Q(dispatched_at__isnull=True),
                name="outbox_undispatched",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk}"


class Deployment(models.Model):
    """One row: the id by which every process of this deployment recognises the Redis
    databases the others use (``core.deployment``)."""

    key = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)

    def __str__(self) -> str:
        return str(self.key)
