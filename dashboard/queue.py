"""The queue: what this reviewer may decide now, oldest first; filtered, sorted, a view
saved per person, and many approvals at once (issue 37, point 6).

Bulk approval is a loop over the one approval service: each memory is fetched with the
same permission-checked selector as its own page, approved (authority checked, audited)
in its own transaction, and a refusal or a lost race is reported for that memory alone."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from approvals import services
from approvals.freshness import Stale, preview_rerun, preview_staleness, previews_staleness
from core.authority import Authority
from core.errors import DomainError, NotFound
from core.principals import Principal
from dashboard.access import dashboard_memory, dashboard_view, page_context, reviews_anything
from dashboard.decisions import despite_words, preview_failures
from dashboard.forms import in_sentences, moved_on
from dashboard.models import SavedView
from dashboard.owner import needing_you
from memory.clarifications import in_words
from memory.models import Clarification, MemoryVersion, Status
from memory.representations import checks_summary
from memory.selectors import versions_with_details

QUEUE_LIMIT = 200
REFRESH_SECONDS = 30
VALUE_CHARS = 60
PAGE = "queue"
SORTS = {
    "oldest": "Waiting longest",
    "newest": "Newest",
    "expiry": "Expiring soonest",
    "owner": "Owner",
    "field": "Field",
}


@dataclass(frozen=True)
class QueueRow:
    version: MemoryVersion
    waiting_since: datetime
    approvals_given: int
    checks: dict[str, Any]
    approvers: tuple[str, ...] = ()
    # A preview older than a change that may alter it (issue 43, point 4): its counts are
    # not shown as if current, and it is not approved in bulk until the rerun is in.
    stale: Stale | None = None

    @property
    def subject(self) -> str:
        """The entity's name, or what the agent heard when nobody is linked yet."""
        subject = self.version.subject
        return subject.name if subject is not None else self.version.item.subject_mention

    @property
    def value_text(self) -> str:
        value = self.version.value
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"

    @property
    def scope_pairs(self) -> set[str]:
        return {f"{dim}={value}" for dim, value in self.version.scope.items()}

    # One line a row (issue 43, point 7): the first scope pair as a chip and "+2" for the
    # rest, which the row's details list whole.
    @property
    def scope_first(self) -> dict[str, Any]:
        return dict(list(self.version.scope.items())[:1])

    @property
    def scope_more(self) -> int:
        return max(len(self.version.scope) - 1, 0)

    @property
    def scope_pairs_text(self) -> str:
        return ", ".join(f"{dim}={value}" for dim, value in self.version.scope.items())


@dataclass(frozen=True)
class QueueView:
    """A filter and a sort, read from and written to a query string; unknown values are
    ignored (a stale saved view shows everything rather than an error)."""

    kind: str = ""
    scope: str = ""
    field: str = ""
    owner: str = ""
    sort: str = "oldest"

    @classmethod
    def from_query(cls, query: QueryDict) -> QueueView:
        sort = query.get("sort", "oldest")
        return cls(
            kind=query.get("kind", "")[:100],
            scope=query.get("scope", "")[:200],
            field=query.get("field", "")[:100],
            owner=query.get("owner", "")[:150],
            sort=sort if sort in SORTS else "oldest",
        )

    def query(self) -> str:
        """Only what differs from the default view, in a fixed order."""
        pairs = [(k, getattr(self, k)) for k in ("kind", "scope", "field", "owner")]
        if self.sort != "oldest":
            pairs.append(("sort", self.sort))
        return urlencode([(k, v) for k, v in pairs if v])

    @property
    def filtered(self) -> bool:
        return any((self.kind, self.scope, self.field, self.owner))

    def keeps(self, row: QueueRow) -> bool:
        version = row.version
        return (
            (not self.kind or version.kind == self.kind)
            and (not self.field or version.field == self.field)
            and (not self.owner or version.owner.get_username() == self.owner)
            and (not self.scope or self.scope in row.scope_pairs)
        )

    def apply(self, rows: list[QueueRow]) -> list[QueueRow]:
        kept = [row for row in rows if self.keeps(row)]
        if self.sort == "newest":
            return sorted(kept, key=lambda r: r.waiting_since, reverse=True)
        if self.sort == "expiry":
            # Memories that never expire last; ties keep the oldest first.
            return sorted(kept, key=lambda r: (r.version.expires_at is None, r.version.expires_at))
        if self.sort == "owner":
            return sorted(kept, key=lambda r: r.version.owner.get_username())
        if self.sort == "field":
            return sorted(kept, key=lambda r: r.version.field)
        return kept


def _decided_by(version: MemoryVersion, user_id: int) -> bool:
    return any(a.reviewer_id == user_id for a in version.approvals.all())


def review_queue(principal: Principal) -> tuple[list[QueueRow], list[QueueRow]]:
    """(to decide, decided by me and waiting for others): pending heads the reviewer may
    decide (``Authority.may_decide``, the rule the API and the emails use), never their
    own proposals."""
    authority = Authority.load(principal)
    user = principal.user
    assert user is not None  # noqa: S101 - dashboard principals are people
    pending = (
        versions_with_details(
            MemoryVersion.objects.filter(tenant=principal.tenant, status=Status.PENDING_REVIEW)
        )
        .select_related("subject")
        .order_by("status_changed_at", "pk")
    )
    to_decide: list[MemoryVersion] = []
    decided: list[MemoryVersion] = []
    for version in pending:
        if len(to_decide) >= QUEUE_LIMIT:
            break
        if authority.may_decide(version):
            (decided if _decided_by(version, user.pk) else to_decide).append(version)
    stale = previews_staleness(to_decide)  # the decided ones' rows show no checks
    for version in to_decide:
        if version.pk in stale:
            preview_rerun(version, stale[version.pk])
    return _rows(to_decide, stale), _rows(decided[:QUEUE_LIMIT], stale)


def _rows(versions: list[MemoryVersion], stale: dict[int, Stale]) -> list[QueueRow]:
    rows = []
    for version in versions:
        approvals = [a for a in version.approvals.all() if a.decision == "approve"]
        rows.append(
            QueueRow(
                version,
                version.status_changed_at,
                len(approvals),
                checks_summary(version),
                tuple(a.reviewer.get_username() for a in approvals),
                stale.get(version.pk),
            )
        )
    return rows


@dataclass(frozen=True)
class HeldRow:
    """A held proposal and what it asks, in words ("Which entity does “Dana” mean?")."""

    version: MemoryVersion
    questions: tuple[tuple[str, str], ...]  # (what it needs, the question)


def open_questions(principal: Principal) -> list[HeldRow]:
    """Held proposals this reviewer could decide once their questions are answered (the
    rule the held email uses), with each open question, subject and value alike: nobody
    can review them until someone answers."""
    authority = Authority.load(principal)
    held = versions_with_details(
        MemoryVersion.objects.filter(tenant=principal.tenant, status=Status.HELD_UNRESOLVED)
    ).order_by("status_changed_at", "pk")
    versions: list[MemoryVersion] = []
    for version in held:
        if len(versions) >= QUEUE_LIMIT:
            break
        if version.number == version.item.head_version and authority.may_decide(version):
            versions.append(version)
    asked: dict[int, list[tuple[str, str]]] = {}
    for question in Clarification.objects.filter(
        version__in=versions, answered_at__isnull=True
    ).order_by("version_id", "member"):
        version = next(v for v in versions if v.pk == question.version_id)
        needs = (
            "Needs a value" if question.member == Clarification.Member.VALUE else "Needs a subject"
        )
        asked.setdefault(version.pk, []).append((needs, in_words(question, version.field)))
    return [
        HeldRow(v, tuple(asked.get(v.pk) or [("Needs a subject", _mentioned(v))])) for v in versions
    ]


def _mentioned(version: MemoryVersion) -> str:
    """A held proposal recorded before questions were stored: its subject mention."""
    return f"Which entity does “{version.item.subject_mention}” mean?"


def saved_view(principal: Principal) -> SavedView | None:
    return SavedView.objects.filter(tenant=principal.tenant, user=principal.user, page=PAGE).first()


def _requested_view(request: HttpRequest, principal: Principal) -> QueueView:
    """The query string's view; a bare visit opens the saved one (``?view=all`` does not)."""
    if not request.GET:
        saved = saved_view(principal)
        if saved is not None:
            return QueueView.from_query(QueryDict(saved.query))
    return QueueView.from_query(request.GET)


def _choices(rows: list[QueueRow]) -> dict[str, list[str]]:
    """The filter's options: the values present among this reviewer's rows."""
    return {
        "kind": sorted({r.version.kind for r in rows}),
        "scope": sorted(set().union(*(r.scope_pairs for r in rows))) if rows else [],
        "field": sorted({r.version.field for r in rows}),
        "owner": sorted({r.version.owner.get_username() for r in rows}),
    }


def may_review_anything(principal: Principal) -> bool:
    """Whether this person could ever be asked to decide: an empty queue means "nothing
    waits" only for them; anyone else is told what they can do instead."""
    return reviews_anything(Authority.load(principal))


def _queue_context(principal: Principal, view: QueueView) -> dict[str, Any]:
    mine, waiting = review_queue(principal)
    saved = saved_view(principal)
    return page_context(
        principal,
        rows=view.apply(mine),
        all_count=len(mine),
        choices=_choices(mine),
        view=view,
        view_query=view.query() or "view=all",
        saved=saved,
        saved_current=saved is not None and saved.query == view.query(),
        sorts=SORTS,
        sort_label=SORTS[view.sort],
        reviewer=may_review_anything(principal),
        held=open_questions(principal),
        waiting=waiting,
        now=timezone.now(),
        refresh_seconds=REFRESH_SECONDS,
    )


@require_GET
@dashboard_view
def queue_page(request: HttpRequest, principal: Principal) -> HttpResponse:
    """The start page after signing in. Someone who reviews nothing is never asked to
    decide: a bare visit takes them to their own memories (issue 43, point 9); a reviewer
    is told here how many of theirs need them."""
    if not request.GET and not may_review_anything(principal):
        return redirect("dashboard:owner")
    view = _requested_view(request, principal)
    context = _queue_context(principal, view)
    return render(request, "dashboard/queue.html", {**context, "yours": needing_you(principal)})


@require_GET
@dashboard_view
def queue_rows(request: HttpRequest, principal: Principal) -> HttpResponse:
    """The htmx refresh of the queue's rows (and, beside them, its open questions) for the
    view the page applied; the forms stay outside what it swaps."""
    view = QueueView.from_query(request.GET)
    return render(request, "dashboard/_queue_refresh.html", _queue_context(principal, view))


def _back(view: QueueView) -> str:
    return reverse("dashboard:queue") + f"?{view.query() or 'view=all'}"


@require_POST
@dashboard_view
def queue_save_view(request: HttpRequest, principal: Principal) -> HttpResponse:
    """Remember (or, with ``forget``, drop) the view the reviewer is looking at."""
    view = QueueView.from_query(request.POST)
    if request.POST.get("forget"):
        SavedView.objects.filter(tenant=principal.tenant, user=principal.user, page=PAGE).delete()
        messages.success(request, "Saved view forgotten: the queue opens with everything.")
        return redirect(reverse("dashboard:queue") + "?view=all")
    SavedView.objects.update_or_create(
        tenant=principal.tenant,
        user=principal.user,
        page=PAGE,
        defaults={"query": view.query()},
    )
    messages.success(request, "View saved: the queue opens this way from now on.")
    return redirect(_back(view))


def approved_message(version: MemoryVersion) -> str:
    """What one approval did, in the words the item page uses."""
    if version.status == Status.CHECKING:
        return "Approved. Every approval is in: the scenario checks are running."
    given = sum(1 for a in version.approvals.all() if a.decision == "approve")
    return f"Approved ({given} of {version.approvals_required}). Waiting for another reviewer."


@dataclass(frozen=True)
class BulkOutcome:
    statement: str
    sentence: str
    ok: bool
    # Why it was left out: its preview failed (and was not confirmed), or is stale.
    left_out: str = ""  # "" | "failed" | "stale"


def approve_each(
    principal: Principal,
    memory_ids: list[str],
    comment: str,
    despite: frozenset[str] = frozenset(),
) -> list[BulkOutcome]:
    """One ``version_approve`` per memory, each in its own transaction and audited by the
    service; one memory's refusal does not undo or stop the others. A memory whose
    preview failed is left out unless its own "approve despite" was ticked (``despite``),
    as on its page (issue 43, point 2)."""
    oversight = Authority.load(principal)
    outcomes: list[BulkOutcome] = []
    for memory_id in dict.fromkeys(memory_ids):
        statement = "A memory you can no longer open"
        try:
            item, head = dashboard_memory(principal, oversight, memory_id)
            statement = head.statement
            stale = preview_staleness(head)
            if stale is not None:
                outcomes.append(
                    BulkOutcome(statement, _left_stale(stale), ok=False, left_out="stale")
                )
                continue
            failures = preview_failures(principal, head) if memory_id not in despite else []
            if failures:
                sentence = (
                    f"left out, not approved: {despite_words(failures)} Tick “approve despite” "
                    "on its row, or open it, to approve it anyway."
                )
                outcomes.append(BulkOutcome(statement, sentence, ok=False, left_out="failed"))
                continue
            version = services.version_approve(principal=principal, item=item, comment=comment)
            version = versions_with_details(MemoryVersion.objects.filter(pk=version.pk)).get()
        except NotFound:
            # Never echo the id: it is not one this reviewer may open (or it is gone).
            outcomes.append(
                BulkOutcome(statement, "not approved: it is not yours to decide.", False)
            )
            continue
        except DomainError as exc:
            now = moved_on(exc)
            sentence = (
                f"not approved: it changed after the queue was loaded and is now “{now}”."
                if now is not None
                else f"not approved: {in_sentences(exc.detail)}"
            )
            outcomes.append(BulkOutcome(statement, sentence, ok=False))
            continue
        outcomes.append(BulkOutcome(statement, approved_message(version), ok=True))
    return outcomes


def _left_stale(stale: Stale) -> str:
    if stale.ran_at is None:
        return (
            "left out, not approved: its preview checks have not run yet. "
            "Approve it once they have."
        )
    return (
        f"left out, not approved: its preview is out of date ({stale.change} since it ran) "
        "and is running again. Approve it once the new result is shown."
    )


@require_POST
@dashboard_view
def queue_approve(request: HttpRequest, principal: Principal) -> HttpResponse:
    """Approve the ticked rows (or ``only`` one, the ``a`` key), then back to the view."""
    view = QueueView.from_query(request.POST)
    only = request.POST.get("only", "")
    memory_ids = [only] if only else request.POST.getlist("memory")
    if not memory_ids:
        messages.error(request, "Tick the memories to approve first.")
        return redirect(_back(view))
    outcomes = approve_each(
        principal,
        memory_ids[:QUEUE_LIMIT],
        request.POST.get("comment", ""),
        frozenset(request.POST.getlist("despite")),
    )
    done = sum(1 for o in outcomes if o.ok)
    failed = sum(1 for o in outcomes if o.left_out == "failed")
    stale = sum(1 for o in outcomes if o.left_out == "stale")
    if len(outcomes) > 1:
        summary = f"Approved {done} of {len(outcomes)}."
        if failed:
            summary += f" Left out {failed} whose preview failed."
        if stale:
            summary += f" Left out {stale} whose preview is out of date."
        (messages.success if done == len(outcomes) else messages.warning)(request, summary)
    for outcome in outcomes:
        report = messages.success if outcome.ok else messages.error
        report(request, f"“{outcome.statement}”: {outcome.sentence}")
    return redirect(_back(view))


def next_in_queue(principal: Principal, after: str) -> str | None:
    """The memory to open after deciding ``after``: the first row of the reviewer's saved
    view (or of the whole queue) that is not it."""
    saved = saved_view(principal)
    view = QueueView.from_query(QueryDict(saved.query)) if saved else QueueView()
    mine, _ = review_queue(principal)
    return next((r.version.item_id for r in view.apply(mine) if r.version.item_id != after), None)
