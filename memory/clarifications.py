"""Questions a proposal asks instead of a silent hold (seed 000: "ask for clarification";
seed 002: ask which address "there" means).

A proposal whose subject is a mention, or whose value is a referent ("there", "it", or an
explicit ``value_mention``), is held; each unclear member gets one ``Clarification`` with
a question and options that carry ids (entity ids for a subject, ``opt_<n>`` for a value).
The proposer or a reviewer answers (``approvals.clarify``); until then nobody can review
or use it."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from audit.chain import canonical_json
from core.principals import Principal
from core.times import iso
from memory.models import Clarification, MemoryVersion, Status
from memory.selectors import entity_match, version_visible

# A value that only points at something said earlier ("send it there") names no value.
REFERENTS = frozenset(
    {
        "there",
        "here",
        "it",
        "that",
        "this",
        "that one",
        "this one",
        "the usual",
        "same as before",
        "same place",
        "the same",
        "the other one",
    }
)
MAX_OPTIONS = 20


def referent(value: Any) -> str | None:
    """The referent a string value is, when it is nothing but one."""
    if not isinstance(value, str):
        return None
    words = re.sub(r"[^\w\s]", " ", value).split()
    text = " ".join(words).casefold()
    return value.strip() if text in REFERENTS else None


def subject_options(principal: Principal, mention: str) -> list[dict[str, Any]]:
    return [
        {"id": entity.pk, "label": f"{entity.name} ({entity.kind})", "matched_on": how}
        for entity, how in entity_match(principal=principal, name=mention, kind=None)
        if entity.erased_at is None
    ][:MAX_OPTIONS]


def value_options(
    principal: Principal,
    *,
    subject_id: str | None,
    field: str,
    given: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """The values the caller may see that Memgov uses for this subject and field now (the
    likely referents), then the ones the proposer offered; each distinct value once."""
    options: list[dict[str, Any]] = []
    seen: set[str] = set()

    def add(value: Any, label: str, memory_id: str | None) -> None:
        key = canonical_json(value)
        if key in seen or len(options) >= MAX_OPTIONS:
            return
        seen.add(key)
        options.append(
            {
                "id": f"opt_{len(options) + 1}",
                "label": label,
                "value": value,
                "memory_id": memory_id,
            }
        )

    if subject_id is not None:
        in_use = MemoryVersion.objects.filter(
            tenant=principal.tenant, subject_id=subject_id, field=field, status=Status.ACTIVE
        ).order_by("item_id")
        for version in in_use:
            if version_visible(version, principal):
                scope = ", ".join(f"{d}={v}" for d, v in sorted(version.scope.items()))
                where = f" [{scope}]" if scope else ""
                add(version.value, f"{version.statement}{where}", version.item_id)
    for option in given:
        add(option["value"], str(option.get("label") or option["value"]), None)
    return options


def ask(
    *,
    version: MemoryVersion,
    member: str,
    mention: str,
    options: list[dict[str, Any]],
) -> Clarification:
    """Record the question (inside the proposal's transaction)."""
    if member == Clarification.Member.SUBJECT:
        question = (
            f"Which entity does {mention!r} mean?"
            if options
            else f"No entity is named {mention!r}: who is it? Create the entity "
            "(create_entity) and answer with its id."
        )
    else:
        question = f"Which {version.field} does {mention!r} mean?"
    return Clarification.objects.create(
        version=version,
        tenant=version.tenant,
        member=member,
        mention=mention,
        question=question,
        options=options,
        asked_at=timezone.now(),
    )


def open_questions(version: MemoryVersion) -> QuerySet[Clarification]:
    return Clarification.objects.filter(version=version, answered_at__isnull=True).order_by(
        "member"  # "subject" before "value": the value options may depend on the subject
    )


def clarification_body(version: MemoryVersion, memory_id: str) -> dict[str, Any] | None:
    """The first open question of a held version, or None (no query unless it is held)."""
    if version.status != Status.HELD_UNRESOLVED:
        return None
    questions = list(open_questions(version))
    if not questions:
        return None
    first = questions[0]
    return {
        "member": first.member,
        "mention": first.mention,
        "question": first.question,
        "options": first.options,
        "asked_at": iso(first.asked_at),
        "remaining": len(questions) - 1,
        "answer_with": f'POST /api/v1/memories/{memory_id}/clarify {{"choice": "<option id>"}}'
        " (MCP tool clarify)",
    }


def settle(version: MemoryVersion, member: str, choice: str, actor: str) -> bool:
    """Mark the open question about ``member`` answered (inside the caller's transaction);
    True when no question of the version is left open."""
    Clarification.objects.filter(version=version, member=member, answered_at__isnull=True).update(
        answered_at=timezone.now(), answered_by=actor, choice=choice
    )
    return not open_questions(version).exists()
