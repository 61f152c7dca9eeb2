"""Review decisions, scenario check results, re-validation jobs and notifications."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from core.ids import new_revalidation_id
from core.models import Tenant
from memory.models import MemoryVersion, Scenario


class Approval(models.Model):
    class Decision(models.TextChoices):
        APPROVE = "approve"
        REJECT = "reject"

    version = models.ForeignKey(MemoryVersion, on_delete=models.PROTECT, related_name="approvals")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    decision = models.CharField(max_length=8, choices=Decision.choices)
    comment = models.TextField(blank=True)
    at = models.DateTimeField()

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            # One reviewer counts once, whatever the race.
            models.UniqueConstraint(
                fields=["version", "reviewer"], name="approval_one_per_reviewer"
            )
        ]

    def __str__(self) -> str:
        return f"{self.reviewer} {self.decision} {self.version}"


class CheckResult(models.Model):
    class Outcome(models.TextChoices):
        PASSED = "passed"
        FAILED = "failed"

    class Run(models.TextChoices):
        PREVIEW = "preview"
        GATE = "gate"
        REVALIDATION = "revalidation"

    version = models.ForeignKey(MemoryVersion, on_delete=models.CASCADE, related_name="checks")
    run = models.CharField(max_length=12, choices=Run.choices)
    scenario_key = models.CharField(max_length=64, help_text="sha256 of the scenario.")
    scenario = models.JSONField()
    generated = models.BooleanField()
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    detail = models.TextField(blank=True)
    impact = models.JSONField(default=list, blank=True)
    policy_version = models.CharField(max_length=20)
    ran_at = models.DateTimeField()

    class Meta:
        ordering = ["ran_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["version", "run", "scenario_key", "policy_version"],
                name="checkresult_unique_per_scenario",
            )
        ]

    def __str__(self) -> str:
        return f"{self.version} {self.scenario_key[:8]} {self.outcome}"


class ScenarioRemoval(models.Model):
    """A custom scenario taken out before activation, by whom and why (issue 43): the
    scenario stays as what was written, and no check asks it again, nor does a correction
    carry it into the next version."""

    scenario = models.OneToOneField(Scenario, on_delete=models.CASCADE, related_name="removal")
    removed_by = models.CharField(max_length=150)
    reason = models.TextField()
    removed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"scenario {self.scenario_id} removed by {self.removed_by}"


class Revalidation(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        DONE = "done"

    id = models.CharField(
        primary_key=True, max_length=40, default=new_revalidation_id, editable=False
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT)
    reason = models.TextField()
    policy_version = models.CharField(max_length=20)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.RUNNING)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    flagged = models.JSONField(default=list)
    started_by = models.CharField(max_length=150)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    # What the job must recheck (fixed at start) and when it last moved: a job ``running``
    # with no progress for a while has lost a chunk, which the sweeper re-enqueues.
    version_ids = models.JSONField(default=list)
    progress_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.id


class RevalidatedVersion(models.Model):
    """A version a revalidation job has counted: each job's own bookkeeping, so a chunk
    delivered twice counts a version once. Check results cannot be it: two jobs under one
    policy version write the same result rows."""

    job = models.ForeignKey(Revalidation, on_delete=models.CASCADE, related_name="counted")
    version = models.ForeignKey(MemoryVersion, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "version"], name="revalidated_once_per_job")
        ]

    def __str__(self) -> str:
        return f"{self.job_id} {self.version_id}"


class Notification(models.Model):
    """One email per (event, recipient): the claim is made before sending, so a task that
    runs twice (at-least-once delivery) never mails twice."""

    event = models.CharField(max_length=120)
    recipient = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT)
    sent_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["event", "recipient"], name="notification_once")
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.recipient}"
