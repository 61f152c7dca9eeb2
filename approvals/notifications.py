"""Who is told what, by email, after commit (DESIGN.md, Notifications).

Each (event, recipient) is claimed in the database before the mail goes out, so a task
delivered twice sends once; a failed send releases its claims for the retry."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from approvals import emails
from approvals.models import Notification
from core import authority
from core.principals import principal_for_user
from memory.models import MemoryVersion, Status
from memory.selectors import entity_match

logger = logging.getLogger(__name__)
DIGEST_THRESHOLD = 3


def reviewers_for(version: MemoryVersion) -> list[User]:
    """People who may decide the version now (``core.authority``), never its proposer."""
    return authority.reviewers_for([version])[version.pk]


def _claim(event: str, user: User, tenant_id: int) -> Notification | None:
    try:
        with transaction.atomic():
            return Notification.objects.create(
                event=event, recipient=user, tenant_id=tenant_id, claimed_at=timezone.now()
            )
    except IntegrityError:
        return None


def _send(name: str, user: User, claims: list[Notification], context: dict[str, Any]) -> None:
    try:
        emails.send(name, user.email, {"user": user, **context})
    except Exception:
        Notification.objects.filter(pk__in=[c.pk for c in claims]).delete()
        raise
    Notification.objects.filter(pk__in=[c.pk for c in claims]).update(sent_at=timezone.now())


def _unannounced_pending(user: User, tenant_id: int) -> list[MemoryVersion]:
    """Pending versions this person may decide and was not yet told about: the grants and
    the announcements are read once, not per pending version."""
    principal = principal_for_user(user)
    if principal is None:
        return []
    allowed = authority.Authority.load(principal)
    announced = set(
        Notification.objects.filter(recipient=user, event__startswith="pending:").values_list(
            "event", flat=True
        )
    )
    pending = MemoryVersion.objects.filter(tenant_id=tenant_id, status=Status.PENDING_REVIEW)
    return [
        version
        for version in pending.select_related("item").order_by("recorded_at")
        if f"pending:{version.pk}" not in announced and allowed.may_decide(version)
    ]


def notify_pending_review(version_id: int) -> int:
    """Tell each reviewer; one with many unannounced items gets a single digest."""
    version = MemoryVersion.objects.select_related("item").get(pk=version_id)
    if version.status != Status.PENDING_REVIEW:
        return 0
    sent = 0
    for user in reviewers_for(version):
        waiting = list(_unannounced_pending(user, version.tenant_id))
        claimed = {v.pk: (v, _claim(f"pending:{v.pk}", user, v.tenant_id)) for v in waiting}
        mine = [(v, claim) for v, claim in claimed.values() if claim is not None]
        if not mine:
            continue
        if len(mine) >= DIGEST_THRESHOLD:
            _send("pending_digest", user, [c for _, c in mine], {"versions": [v for v, _ in mine]})
        else:
            for item_version, claim in mine:
                _send("pending_review", user, [claim], {"version": item_version})
        sent += 1
    return sent


def notify_held_mention(version_id: int) -> int:
    """A mention matched no single entity: the reviewers who could decide the item are
    told it needs a subject (once per version and person), with the entities it might be."""
    version = MemoryVersion.objects.select_related("item", "tenant").get(pk=version_id)
    if version.status != Status.HELD_UNRESOLVED:
        return 0
    sent = 0
    for user in reviewers_for(version):
        claim = _claim(f"held:{version.pk}", user, version.tenant_id)
        if claim is None:
            continue
        principal = principal_for_user(user)
        candidates = (
            [
                entity
                for entity, _ in entity_match(
                    principal=principal, name=version.item.subject_mention, kind=None
                )
            ]
            if principal is not None
            else []
        )
        _send("held_mention", user, [claim], {"version": version, "candidates": candidates})
        sent += 1
    return sent


def notify_owner(version_id: int, event: str, template: str, context: dict[str, Any]) -> bool:
    version = MemoryVersion.objects.select_related("owner", "item").get(pk=version_id)
    owner = version.owner
    if not owner.email or not owner.is_active:  # a deactivated person gets no email
        return False
    claim = _claim(f"{event}:{version.pk}", owner, version.tenant_id)
    if claim is None:
        return False
    _send(template, owner, [claim], {"version": version, **context})
    return True


def remind_pending(version_id: int, day: str) -> int:
    """A daily reminder of a version still waiting; once per reviewer and day."""
    version = MemoryVersion.objects.select_related("item").get(pk=version_id)
    sent = 0
    for user in reviewers_for(version):
        claim = _claim(f"reminder:{day}:{version.pk}", user, version.tenant_id)
        if claim is not None:
            _send("pending_review", user, [claim], {"version": version, "reminder": True})
            sent += 1
    return sent


def _people_to_tell(version: MemoryVersion) -> list[User]:
    """The owner and the reviewers with authority over the version (one authority rule)."""
    people = {version.owner.pk: version.owner} if version.owner.is_active else {}
    for reviewer in reviewers_for(version):
        people.setdefault(reviewer.pk, reviewer)
    return [user for user in people.values() if user.email]


def notify_revalidation_failure(version_id: int, job: Any) -> int:
    """Owner and reviewers learn that the item failed revalidation (and was suspended)."""
    version = MemoryVersion.objects.select_related("owner", "item").get(pk=version_id)
    suspended = version.status == Status.CHECKS_FAILED
    sent = 0
    for user in _people_to_tell(version):
        claim = _claim(f"revalidation:{job.pk}:{version.pk}", user, version.tenant_id)
        if claim is not None:
            context = {"version": version, "job": job, "suspended": suspended}
            _send("revalidation_failed", user, [claim], context)
            sent += 1
    return sent
