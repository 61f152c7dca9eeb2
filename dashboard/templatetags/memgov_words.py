"""Machine vocabulary in the words a reviewer uses (issue 43, point 14): one place maps
a status or a kind to what pages say, so no page shows ``pending_review`` or
``task_fact`` and every page says the same thing. Ids stay in id columns."""

from __future__ import annotations

import re

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


VERIFICATION_WORDS = {
    "verified_record": "verified against a record",
    "confirmed": "confirmed by a person",
    "asserted": "asserted, not verified",
}


@register.filter
def verification_word(verification: str) -> str:
    """ "verified_record" → "verified against a record"."""
    return VERIFICATION_WORDS.get(str(verification), str(verification).replace("_", " "))


@register.filter
def kind_word(kind: str) -> str:
    """ "task_fact" → "task fact" (the emails' word, ``approvals.emails.kind_name``)."""
    return kind_name(str(kind))


@register.filter
def scope_pair_word(pair: str) -> str:
    """ "tenant=*" → "tenant-wide", the one name every page gives that scope."""
    return "tenant-wide" if pair == "tenant=*" else pair


OUTCOME_WORDS = {  # the resolver's outcomes, abstentions and qualifiers, as time travel says them
    "selected": "chosen",
    "conflict": "conflict: equally ranked values",
    "no_applicable_fact": "no fact applies",
    "valid_from_unknown": "start unknown",
    "pending_correction": "a correction is pending",
    "outranked": "outranked",
    "out_of_scope": "does not apply in this context",
    "not_valid_at_time": "not valid at that time",
    "expired": "expired",
}


@register.filter
def outcome_word(outcome: str) -> str:
    """ "out_of_scope" → "does not apply in this context"."""
    return OUTCOME_WORDS.get(str(outcome), str(outcome).replace("_", " "))


UNSCOPED = re.compile(r"\bunscoped\b")
KIND_CODED = re.compile(r"\b(task_fact|enterprise_rule|business_record)\b")
CODED = re.compile(r"\b(" + "|".join(k for k in OUTCOME_WORDS if "_" in k) + r")\b")


@register.filter
def detail_words(text: str) -> str:
    """A check's recorded detail with the resolver's codes in words ("abstains: no fact
    applies"); the rest of the sentence is already words."""
    worded = CODED.sub(lambda m: OUTCOME_WORDS[m.group(1)], str(text))
    worded = KIND_CODED.sub(lambda m: kind_name(m.group(1)), worded)
    return UNSCOPED.sub("tenant-wide", worded)  # one name for a scope that applies everywhere


@register.filter
def action_word(action: str) -> str:
    """An audit action in words: "memory.pending_review" → "memory: waiting for review"."""
    target, _, what = str(action).partition(".")
    if not what:
        return target.replace("_", " ")
    return f"{target.replace('_', ' ')}: {STATUS_WORDS.get(what, what.replace('_', ' '))}"
