"""Who is told what, by email, after commit (docs/design.md, Notifications).

The rule, the same for every kind of email: **one email per event per person**. An event
(a proposal recorded, a retirement, a revalidation job's failures, the daily reminder run)
may concern several memories; each person it concerns gets one message naming all of
theirs — a single-item email for one, a digest for more. Each (memory, recipient) is
claimed in the database before the mail goes out, so a task delivered twice sends once
and a memory already announced is not announced again; a failed send releases its claims
for the retry."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from approvals import emails
from approvals.explain import failure_for, ties_for
from approvals.models import Notification
from core import authority
from core.kinds import MemoryKind
from core.principals import principal_for_user
from memory import clarifications
from memory.models import Clarification, Erasure, MemoryVersion, Status
from memory.selectors import entity_match

logger = logging.getLogger(__name__)


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


def _keyed(event: str, versions: Iterable[MemoryVersion]) -> list[tuple[str, MemoryVersion]]:
    return [(f"{event}:{v.pk}", v) for v in versions]


def _tell(
    user: User,
    keyed: list[tuple[str, MemoryVersion]],
    templates: tuple[str, str],
    extra: dict[str, Any] | None = None,
) -> bool:
    """One email to ``user`` about the versions of one event not yet claimed for them
    (each under its claim key); ``templates`` is (one memory, several memories); returns
    whether a message went out."""
    claimed = [(v, _claim(key, user, v.tenant_id)) for key, v in keyed]
    mine = [(v, claim) for v, claim in claimed if claim is not None]
    if not mine:
        return False
    claims = [claim for _, claim in mine]
    items = {v.item_id for v, _ in mine}
    name = templates[0] if len(items) == 1 else templates[1]
    try:
        emails.send(name, user, [v for v, _ in mine], extra or {})
    except Exception:
        Notification.objects.filter(pk__in=[c.pk for c in claims]).delete()
        raise
    Notification.objects.filter(pk__in=[c.pk for c in claims]).update(sent_at=timezone.now())
    return True


PENDING = ("pending_review", "pending_digest")


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
        for version in pending.select_related("item", "tenant").order_by("recorded_at")
        if f"pending:{version.pk}" not in announced and allowed.may_decide(version)
    ]


def notify_pending_review(version_id: int) -> int:
    """Tell each reviewer, in one email, about this version and any other waiting for them
    that no earlier email named (a busy queue); returns how many people were told."""
    version = MemoryVersion.objects.select_related("item").get(pk=version_id)
    if version.status != Status.PENDING_REVIEW:
        return 0
    return sum(
        _tell(user, _keyed("pending", _unannounced_pending(user, version.tenant_id)), PENDING)
        for user in reviewers_for(version)
    )


def notify_held_mention(version_id: int) -> int:
    """A proposal asks a question (which entity a mention means, or which value "there"
    stands for): the reviewers who could decide the item are told the question, once per
    version and person, with the answers each of them may see."""
    version = MemoryVersion.objects.select_related("item", "tenant").get(pk=version_id)
    if version.status != Status.HELD_UNRESOLVED:
        return 0
    questions = list(clarifications.open_questions(version))
    mention = version.item.subject_mention
    sent = 0
    for user in reviewers_for(version):
        principal = principal_for_user(user)
        context: dict[str, Any] = {
            "mention": mention,
            "candidates": [],
            "questions": [clarifications.in_words(q, version.field) for q in questions],
            "value_question": None,
            "value_options": [],
        }
        if principal is not None and mention:
            context["candidates"] = [
                entity for entity, _ in entity_match(principal=principal, name=mention, kind=None)
            ]
        value = next((q for q in questions if q.member == Clarification.Member.VALUE), None)
        if value is not None:
            context["value_question"] = clarifications.in_words(value, version.field)
            context["value_mention"] = value.mention
            if principal is not None:
                context["value_options"] = [
                    _option_words(option)
                    for option in clarifications.readable_options(principal, value.options)
                ]
        sent += _tell(user, _keyed("held", [version]), ("held_mention", "held_mention"), context)
    return sent


def _option_words(option: clarifications.Option) -> str:
    """ "“4 Dock Road” (from “Order order-a goes to Dana's office”)": a value this reader
    may see, and where it comes from."""
    value = option.body["value"]
    said = f"“{value}”" if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if option.origin is not None:
        return f"{said} (from “{option.origin.statement}”)"
    label = str(option.body.get("label") or "")
    return f"{said} ({label})" if label and label != value else said


def notify_checks_failed(version_id: int) -> int:
    """The owner, who can correct it, and every reviewer who approved it, whose approval
    did not take effect (issue 37): one email each, with the failure in one sentence
    naming memories by the statements that reader may see."""
    version = MemoryVersion.objects.select_related("owner", "item", "tenant").get(pk=version_id)
    approvers = [
        approval.reviewer
        for approval in version.approvals.filter(decision="approve").select_related("reviewer")
    ]
    people = {version.owner.pk: version.owner}
    for reviewer in approvers:
        people.setdefault(reviewer.pk, reviewer)
    approved = {reviewer.pk for reviewer in approvers}
    sent = 0
    for user in people.values():
        if not user.email or not user.is_active:  # a deactivated person gets no email
            continue
        reader = principal_for_user(user)
        context = {
            "why": failure_for(reader, version),
            "approved": user.pk in approved,
            "owns": user.pk == version.owner_id,
            # A tie is fixed by replacing or retiring the older memory, not by a correction.
            "ties_with": ties_for(reader, version),
        }
        sent += _tell(user, _keyed("checks_failed", [version]), ("checks_failed",) * 2, context)
    return sent


def _by_owner(versions: Iterable[MemoryVersion]) -> dict[User, list[MemoryVersion]]:
    people: dict[User, list[MemoryVersion]] = {}
    for version in versions:
        if version.owner.email and version.owner.is_active:
            people.setdefault(version.owner, []).append(version)
    return people


def notify_retired(version_ids: list[int]) -> int:
    """One retirement or revocation is one event: each owner gets one email naming every
    memory of theirs it ended (an item's versions together)."""
    versions = (
        MemoryVersion.objects.filter(pk__in=version_ids)
        .select_related("owner", "item", "tenant")
        .order_by("item_id", "number")
    )
    return sum(
        _tell(owner, _keyed("retired", mine), ("retired", "retired"))
        for owner, mine in _by_owner(versions).items()
    )


def remind_pending(versions: list[MemoryVersion], day: str) -> int:
    """The daily reminder: each reviewer gets one email naming what still waits for them
    (once per reviewer, memory and day)."""
    waiting: dict[User, list[MemoryVersion]] = {}
    for version_id, people in authority.reviewers_for(versions).items():
        version = next(v for v in versions if v.pk == version_id)
        for user in people:
            waiting.setdefault(user, []).append(version)
    return sum(
        _tell(user, _keyed(f"reminder:{day}", mine), PENDING, {"reminder": True})
        for user, mine in waiting.items()
    )


def warn_expiring(windows: list[tuple[int, list[MemoryVersion]]]) -> int:
    """The daily expiry warnings: one email per owner naming each memory entering a
    warning window (7 days, 1 day) that it was not yet warned about."""
    owners: dict[User, list[tuple[str, MemoryVersion]]] = {}
    for days, versions in windows:
        for owner, mine in _by_owner(versions).items():
            owners.setdefault(owner, []).extend(_keyed(f"expiry_{days}d", mine))
    return sum(
        _tell(owner, due, ("expiry_warning", "expiry_warning")) for owner, due in owners.items()
    )


def _people_to_tell(version: MemoryVersion, reviewers: list[User]) -> list[User]:
    """The owner and the reviewers with authority over the version (one authority rule)."""
    people = {version.owner.pk: version.owner} if version.owner.is_active else {}
    for reviewer in reviewers:
        people.setdefault(reviewer.pk, reviewer)
    return [user for user in people.values() if user.email]


def notify_revalidation_failures(job: Any, versions: list[MemoryVersion]) -> int:
    """Owners and reviewers learn which of their memories failed the job's revalidation
    (and were suspended, or flagged): one email per person for the whole job."""
    reviewers = authority.reviewers_for(versions)
    people: dict[User, list[MemoryVersion]] = {}
    for version in versions:
        for user in _people_to_tell(version, reviewers[version.pk]):
            people.setdefault(user, []).append(version)
    return sum(
        _tell(
            user,
            _keyed(f"revalidation:{job.pk}", mine),
            ("revalidation_failed", "revalidation_failed"),
            {"job": job},
        )
        for user, mine in people.items()
    )


def notify_erasure_done(erasure_id: str) -> bool:
    """The requester learns the erasure finished: ids and counts, never the content."""
    job = Erasure.objects.select_related("requested_by", "tenant").get(pk=erasure_id)
    user = job.requested_by
    if job.status != Erasure.Status.DONE or user is None or not user.email:
        return False
    return tell_once(f"erasure:{job.pk}", user, job.tenant_id, "erasure_done", {"erasure": job})


def tell_once(
    event: str, user: User, tenant_id: int, template: str, context: dict[str, Any]
) -> bool:
    """One email about something other than memory versions (an erasure, a webhook
    endpoint), claimed under ``event`` so a redelivered task sends nothing twice."""
    claim = _claim(event, user, tenant_id)
    if claim is None:
        return False
    try:
        emails.send_to(template, user, context)
    except Exception:
        claim.delete()
        raise
    Notification.objects.filter(pk=claim.pk).update(sent_at=timezone.now())
    return True


def pending_review_gauges() -> Iterator[GaugeMetricFamily]:
    """Versions waiting for review and the oldest one's wait, by kind (``/metrics``,
    registered in approvals.apps)."""
    count = GaugeMetricFamily(
        "memgov_pending_reviews", "Versions waiting for review, by kind.", labels=["kind"]
    )
    age = GaugeMetricFamily(
        "memgov_pending_review_oldest_age_seconds",
        "How long the oldest version of each kind has waited for review.",
        labels=["kind"],
    )
    rows = {
        row["kind"]: row
        for row in MemoryVersion.objects.filter(status=Status.PENDING_REVIEW)
        .values("kind")
        .annotate(n=Count("pk"), oldest=Min("status_changed_at"))
    }
    now = timezone.now()
    for kind in MemoryKind.values:
        row = rows.get(kind)
        count.add_metric([kind], row["n"] if row else 0)
        waited = (now - row["oldest"]).total_seconds() if row else 0.0
        age.add_metric([kind], max(0.0, waited))
    yield count
    yield age
