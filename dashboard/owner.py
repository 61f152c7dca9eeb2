"""Your memories: the start page of a person who owns memories (issue 43, point 9).

An owner is told by email when a memory of theirs fails its checks, is about to expire,
is retired or waits for an answer; this page lists the same memories, each with why in
words and what to do about it. A person who reviews nothing lands here after signing in
(``dashboard.queue.queue_page``); everyone reaches it from the navigation.

Reads only: the memories are the heads of the lineages this person owns that they may see
(``core.authority``); the words are the emails' (``approvals.wording``,
``approvals.explain``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from approvals import wording
from approvals.emails import relative
from approvals.explain import failure_for, latest_deciding
from approvals.models import CheckResult
from approvals.tasks import EXPIRY_WARNINGS
from core.authority import Authority, reviewers_for
from core.principals import Principal
from dashboard.access import dashboard_view, page_context
from memory import clarifications
from memory.models import MemoryVersion, Status
from memory.selectors import versions_with_details

EXPIRING_WITHIN = max(EXPIRY_WARNINGS)  # the expiry email's first warning
ENDED_WITHIN = timedelta(days=30)
LIMIT = 100  # per section; the memory browser lists them all


@dataclass(frozen=True)
class Attention:
    """One memory of the owner's, why it needs them, and what they can do."""

    version: MemoryVersion
    why: str
    todo: str
    action: str = ""  # the link's words, when there is something to do on its page
    anchor: str = ""

    @property
    def url(self) -> str:
        page = reverse("dashboard:item", args=[self.version.item_id])
        return f"{page}#{self.anchor}" if self.anchor else page


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    intro: str
    rows: tuple[Attention, ...]


def _owned_heads(principal: Principal) -> list[MemoryVersion]:
    """The heads of this person's lineages in the statuses this page lists, that they
    may see (an owner who lost a label sees fewer, as everywhere)."""
    now = timezone.now()
    oversight = Authority.load(principal)
    heads = versions_with_details(
        MemoryVersion.objects.filter(
            tenant=principal.tenant,
            owner=principal.user,
            number=F("item__head_version"),
            status__in=[
                Status.CHECKS_FAILED,
                Status.HELD_UNRESOLVED,
                Status.ACTIVE,
                Status.RETIRED,
                Status.EXPIRED,
            ],
        ).exclude(status=Status.ACTIVE, expires_at__isnull=True)
    ).order_by("status_changed_at", "pk")
    ended = (Status.RETIRED, Status.EXPIRED)
    return [
        v
        for v in heads
        if oversight.sees(v)
        and (v.status != Status.ACTIVE or (v.expires_at and v.expires_at <= now + EXPIRING_WITHIN))
        and (v.status not in ended or v.status_changed_at >= now - ENDED_WITHIN)
    ]


def _is_tie(version: MemoryVersion) -> bool:
    return any(
        r.outcome == CheckResult.Outcome.FAILED and r.scenario.get("kind") == "regression"
        for r in latest_deciding(version.checks.all())
    )


def _failed(principal: Principal, version: MemoryVersion) -> Attention:
    why = failure_for(principal, version) or "Its scenario checks failed."
    if _is_tie(version):
        return Attention(
            version,
            why,
            "A correction does not fix a tie: a reviewer who may retire the older memory "
            "replaces it with this one on its page, or retires it and runs the checks again.",
            "Open it",
        )
    return Attention(
        version,
        why,
        "Propose a correction: change what is wrong (the value, the statement or the "
        "scope); the new version goes to review again.",
        "Correct it",
        "correct",
    )


def _held(version: MemoryVersion, deciders: list[str]) -> Attention:
    questions = [
        clarifications.in_words(q, version.field) for q in clarifications.open_questions(version)
    ]
    why = " ".join(questions) or (
        f"It mentions “{version.item.subject_mention}”, and no single entity has that name."
    )
    who = f" ({', '.join(deciders)})" if deciders else ""
    return Attention(
        version,
        f"{why} Nobody can review it until that is answered.",
        f"A reviewer{who} answers it on its page, then it goes to review. If you know the "
        "answer, tell them.",
        "Open it",
        "subject" if version.item.subject_id is None else "question",
    )


def _expiring(version: MemoryVersion, now: datetime) -> Attention:
    assert version.expires_at is not None  # noqa: S101 - selected for its expiry
    local = timezone.localtime(version.expires_at)
    return Attention(
        version,
        f"It expires on {local:%Y-%m-%d at %H:%M} {local.tzname()} "
        f"({relative(version.expires_at, now)}); "
        "after that no agent is told it.",
        "Nothing, if it should end then. If it still holds after that, it must be proposed "
        "again with a later expiry, with evidence that it still holds.",
    )


def _ended(principal: Principal, version: MemoryVersion, now: datetime) -> Attention:
    verb = "was retired" if version.status == Status.RETIRED else "expired"
    when = relative(version.status_changed_at, now)
    reason = wording.reason_words(version, principal)
    why = f"It {verb} {when}" + (f": {reason}." if reason else ".")
    return Attention(
        version,
        why,
        "Nothing: no agent is told it any more. If it still holds, it needs a new proposal "
        "with evidence that does.",
    )


def owner_sections(principal: Principal) -> list[Section]:
    """The owner's memories that need them, by what happened (sections may be empty)."""
    now = timezone.now()
    heads = _owned_heads(principal)
    held = [v for v in heads if v.status == Status.HELD_UNRESOLVED]
    deciders = reviewers_for(held) if held else {}
    by_status: dict[str, list[Attention]] = {"failed": [], "held": [], "expiring": [], "ended": []}
    for version in heads:
        if version.status == Status.CHECKS_FAILED:
            by_status["failed"].append(_failed(principal, version))
        elif version.status == Status.HELD_UNRESOLVED:
            names = [u.get_username() for u in deciders.get(version.pk, [])]
            by_status["held"].append(_held(version, names))
        elif version.status == Status.ACTIVE:
            by_status["expiring"].append(_expiring(version, now))
        else:
            by_status["ended"].append(_ended(principal, version, now))
    by_status["expiring"].sort(key=lambda a: a.version.expires_at or now)
    by_status["ended"].sort(key=lambda a: a.version.status_changed_at, reverse=True)
    days = ENDED_WITHIN.days
    return [
        Section(
            "failed",
            "Failed their checks",
            "Not used: the scenario checks found a problem.",
            tuple(by_status["failed"][:LIMIT]),
        ),
        Section(
            "held",
            "Waiting for an answer",
            "Held before review: an agent left a question only a person can answer.",
            tuple(by_status["held"][:LIMIT]),
        ),
        Section(
            "expiring",
            "Expiring soon",
            f"In use, and ending within {EXPIRING_WITHIN.days} days.",
            tuple(by_status["expiring"][:LIMIT]),
        ),
        Section(
            "ended",
            "Retired or expired",
            f"No longer used; ended in the last {days} days.",
            tuple(by_status["ended"][:LIMIT]),
        ),
    ]


def needing_you(principal: Principal) -> int:
    """How many of this person's memories failed their checks or wait for an answer:
    what the queue mentions to a reviewer who also owns memories."""
    return sum(len(s.rows) for s in owner_sections(principal) if s.key in ("failed", "held"))


@require_GET
@dashboard_view
def owner_page(request: HttpRequest, principal: Principal) -> HttpResponse:
    sections = owner_sections(principal)
    return render(
        request,
        "dashboard/owner.html",
        page_context(
            principal,
            sections=[s for s in sections if s.rows],
            quiet=not any(s.rows for s in sections),
            expiring_days=EXPIRING_WITHIN.days,
            ended_days=ENDED_WITHIN.days,
        ),
    )
