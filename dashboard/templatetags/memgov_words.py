"""Machine vocabulary in the words a reviewer uses (issue 43, point 14): one place maps
a status or a kind to what pages say, so no page shows ``pending_review`` or
``task_fact`` and every page says the same thing. Ids stay in id columns."""

from __future__ import annotations

from django import template

from approvals.emails import kind_name
from memory.models import Status

register = template.Library()

STATUS_WORDS: dict[str, str] = {
    Status.HELD_UNRESOLVED: "waiting for an answer",
    Status.PENDING_REVIEW: "waiting for review",
    Status.CHECKING: "checks running",
    Status.CHECKS_FAILED: "checks failed",
    Status.ACTIVE: "active",
    Status.REJECTED: "rejected",
    Status.SUPERSEDED: "replaced by a newer version",
    Status.RETIRED: "retired",
    Status.EXPIRED: "expired",
}


@register.filter
def status_word(status: str) -> str:
    """ "pending_review" → "waiting for review"; an unknown code reads as words too."""
    return STATUS_WORDS.get(str(status), str(status).replace("_", " "))


@register.filter
def kind_word(kind: str) -> str:
    """ "task_fact" → "task fact" (the emails' word, ``approvals.emails.kind_name``)."""
    return kind_name(str(kind))


@register.filter
def scope_pair_word(pair: str) -> str:
    """ "tenant=*" → "tenant-wide", the one name every page gives that scope."""
    return "tenant-wide" if pair == "tenant=*" else pair
