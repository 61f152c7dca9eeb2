"""The queue: what this reviewer may decide now, oldest first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from core.authority import Authority
from core.principals import Principal
from dashboard.access import dashboard_view, page_context
from memory.models import MemoryVersion, Status
from memory.representations import checks_summary
from memory.selectors import versions_with_details

QUEUE_LIMIT = 200
REFRESH_SECONDS = 30


@dataclass(frozen=True)
class QueueRow:
    version: MemoryVersion
    waiting_since: datetime
    approvals_given: int
    checks: dict[str, Any]


def _decided_by(version: MemoryVersion, user_id: int) -> bool:
    return any(a.reviewer_id == user_id for a in version.approvals.all())


def review_queue(principal: Principal) -> tuple[list[QueueRow], list[QueueRow]]:
    """(to decide, decided by me and waiting for others): pending heads the reviewer may
    decide (``Authority.may_decide``, the rule the API and the emails use), never their
    own proposals."""
    authority = Authority.load(principal)
    user = principal.user
    assert user is not None  # noqa: S101 - dashboard principals are people
    pending = versions_with_details(
        MemoryVersion.objects.filter(tenant=principal.tenant, status=Status.PENDING_REVIEW)
    ).order_by("status_changed_at", "pk")
    mine: list[QueueRow] = []
    waiting: list[QueueRow] = []
    for version in pending:
        if len(mine) >= QUEUE_LIMIT:
            break
        if not authority.may_decide(version):
            continue
        approvals = [a for a in version.approvals.all() if a.decision == "approve"]
        row = QueueRow(version, version.status_changed_at, len(approvals), checks_summary(version))
        (waiting if _decided_by(version, user.pk) else mine).append(row)
    return mine, waiting[:QUEUE_LIMIT]


def needs_subject(principal: Principal) -> list[MemoryVersion]:
    """Held mentions this reviewer could decide once linked (the rule the held email
    uses): nobody can review them until someone says who they are about."""
    authority = Authority.load(principal)
    held = versions_with_details(
        MemoryVersion.objects.filter(tenant=principal.tenant, status=Status.HELD_UNRESOLVED)
    ).order_by("status_changed_at", "pk")
    rows: list[MemoryVersion] = []
    for version in held:
        if len(rows) >= QUEUE_LIMIT:
            break
        if version.number == version.item.head_version and authority.may_decide(version):
            rows.append(version)
    return rows


def _queue_context(principal: Principal) -> dict[str, Any]:
    mine, waiting = review_queue(principal)
    return page_context(
        principal,
        rows=mine,
        held=needs_subject(principal),
        waiting=waiting,
        now=timezone.now(),
        refresh_seconds=REFRESH_SECONDS,
    )


@require_GET
@dashboard_view
def queue_page(request: HttpRequest, principal: Principal) -> HttpResponse:
    return render(request, "dashboard/queue.html", _queue_context(principal))


@require_GET
@dashboard_view
def queue_rows(request: HttpRequest, principal: Principal) -> HttpResponse:
    """The htmx refresh of the queue table."""
    return render(request, "dashboard/_queue_rows.html", _queue_context(principal))
