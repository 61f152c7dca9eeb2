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
from dataclasses import dataclass
from typing import Any

from django.db.models import F, QuerySet
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
PUBLIC_MEMBERS = ("id", "label", "value", "memory_id")  # what docs/api.md shows of an option


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
    taken: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """The values the caller may see that Memgov uses for this subject and field now (the
    likely referents), then the ones the proposer offered; each distinct value once, and
    none already among the ``taken`` options (numbered after them)."""
    options: list[dict[str, Any]] = []
    seen: set[str] = {canonical_json(o["value"]) for o in taken}

    def add(value: Any, label: str, origin: MemoryVersion | None) -> None:
        key = canonical_json(value)
        if key in seen or len(taken) + len(options) >= MAX_OPTIONS:
            return
        seen.add(key)
        option = {
            "id": f"opt_{len(taken) + len(options) + 1}",
            "label": label,
            "value": value,
            "memory_id": origin.item_id if origin else None,
        }
        if origin is not None:
            option["version"] = origin.number  # where the value came from; never shown
        options.append(option)

    if subject_id is not None:
        in_use = MemoryVersion.objects.filter(
            tenant=principal.tenant, subject_id=subject_id, field=field, status=Status.ACTIVE
        ).order_by("item_id")
        for version in in_use:
            if version_visible(version, principal):
                scope = ", ".join(f"{d}={v}" for d, v in sorted(version.scope.items()))
                where = f" [{scope}]" if scope else ""
                add(version.value, f"{version.statement}{where}", version)
    for option in given:
        add(option["value"], str(option.get("label") or option["value"]), None)
    return options


@dataclass(frozen=True)
class Option:
    """A value option as a reader may be shown it, with the version its value came from
    (None for one the proposer offered in words)."""

    body: dict[str, Any]
    origin: MemoryVersion | None


def readable_options(reader: Principal, options: Sequence[Mapping[str, Any]]) -> list[Option]:
    """The options this reader may see, read against the memories' labels *now*: an option
    copied from a memory is shown only to who may see that version and its memory's head,
    whoever asked the question and whatever has changed since (issue 42)."""
    wanted = {o["memory_id"] for o in options if o.get("memory_id")}
    versions: dict[str, dict[int, MemoryVersion]] = {}
    heads: dict[str, int] = {}
    if wanted:
        rows = MemoryVersion.objects.filter(tenant=reader.tenant, item_id__in=wanted).annotate(
            head=F("item__head_version")
        )
        for row in rows.defer("statement", "basis"):
            versions.setdefault(row.item_id, {})[row.number] = row
            heads[row.item_id] = row.head
    shown: list[Option] = []
    for option in options:
        body = {key: option.get(key) for key in PUBLIC_MEMBERS}
        memory_id = option.get("memory_id")
        if not memory_id:
            shown.append(Option(body, None))
            continue
        lineage = versions.get(memory_id, {})
        origin = lineage.get(option.get("version") or _in_use(lineage))
        head = lineage.get(heads.get(memory_id, 0))
        if origin is None or head is None or origin.erased_at is not None:
            continue
        if version_visible(origin, reader) and version_visible(head, reader):
            shown.append(Option(body, origin))
    return shown


def shown_options(reader: Principal, question: Clarification) -> list[dict[str, Any]]:
    """A question's options as the reader may see them (entities for a subject question;
    for a value question only the values the reader may see)."""
    if question.member == Clarification.Member.SUBJECT:
        return list(question.options)
    return [option.body for option in readable_options(reader, question.options)]


def _in_use(lineage: Mapping[int, MemoryVersion]) -> int:
    """An option stored before options named their version: the lineage's active one."""
    return next((n for n, v in lineage.items() if v.status == Status.ACTIVE), 0)


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


def waits_for_subject(question: Clarification, version: MemoryVersion) -> bool:
    """A value question asked while the subject was a mention: the values it can mean are
    the subject's, so they are offered once the subject is answered (issue 44, point 11)."""
    return question.member == Clarification.Member.VALUE and version.subject_id is None


def offer_subject_values(principal: Principal, version: MemoryVersion) -> None:
    """The subject has just been answered (inside the caller's transaction): an open value
    question now offers the values in use for that subject and field that ``principal``
    may see, after the options it already had (their ids stay what they were). Readers
    are shown only what they may see (``readable_options``); with no option at all the
    question says how to give the value instead."""
    question = (
        Clarification.objects.select_for_update()
        .filter(version=version, member=Clarification.Member.VALUE, answered_at__isnull=True)
        .first()
    )
    if question is None or version.subject_id is None:
        return
    offered = value_options(
        principal,
        subject_id=version.subject_id,
        field=version.field,
        given=[],
        taken=question.options,
    )
    question.options = [*question.options, *offered]
    if not question.options:
        question.question = (
            f"Memgov holds no {version.field} for this subject that {question.mention!r} "
            "could mean: correct the memory with the value itself."
        )
    question.save(update_fields=["options", "question"])


def open_questions(version: MemoryVersion) -> QuerySet[Clarification]:
    return Clarification.objects.filter(version=version, answered_at__isnull=True).order_by(
        "member"  # "subject" before "value": the value options may depend on the subject
    )


def clarification_body(
    version: MemoryVersion, memory_id: str, reader: Principal
) -> dict[str, Any] | None:
    """The first open question of a held version as ``reader`` may see it, or None (no
    query unless it is held)."""
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
        "options": shown_options(reader, first),
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


def in_words(question: Clarification, field: str) -> str:
    """The question as a person reads it (the stored ``question`` is the API's, which
    names the field as code): "Which delivery address does “there” mean?"."""
    if question.member == Clarification.Member.SUBJECT:
        if question.options:
            return f"Which entity does “{question.mention}” mean?"
        return f"No entity is named “{question.mention}”: who is it?"
    return f"Which {field.replace('_', ' ')} does “{question.mention}” mean?"
