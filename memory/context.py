"""The context block (docs/api.md, Context): what an agent may put in a prompt about some
subjects for a task, governed as resolve is (seed 002: scope by tenant and subject before
ranking; a bounded, labelled context; verified records stay authoritative; ask rather than
guess).

Each subject is answered by the resolver exactly as ``POST /resolve`` answers it (the same
cache, the same labels), then the block adds what an agent needs around the facts: the
questions to ask instead of guessing, proposals still pending that may change an answer,
and, for a field whose committed state another system holds (field catalog), a note that
memory is only advisory. Items are ranked, cut to ``max_tokens`` by an offline estimate
(no tokenizer; ``estimate_tokens``), and what was cut is said. With a ``task_id`` the block
is recorded as a retrieval, as resolve records one, so ``check_task`` covers it."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from audit.chain import canonical_json
from core.errors import Gone, NotFound
from core.principals import Principal
from memory import resolution
from memory.catalog import advisory_words
from memory.models import Entity, MemoryVersion, Status
from memory.resolver import KIND_RANK, VERIFICATION_RANK
from memory.selectors import current_policy, entity_match, match_decision
from memory.visibility import VisibleTo

ESTIMATOR = (
    "memgov-estimate-v1: offline, no tokenizer; a word counts one token per 4 characters, "
    "each other symbol one token (close to, usually above, cl100k/o200k counts)"
)
_PIECES = re.compile(r"\w+|[^\w\s]")
# Pending proposals that may still change an answer (not held: those ask a question first).
_PENDING = (Status.PENDING_REVIEW, Status.CHECKING)
SECTIONS = ("ask", "advisory", "facts", "pending", "plans")


def estimate_tokens(text: str) -> int:
    return sum(math.ceil(len(p) / 4) if p[0].isalnum() else 1 for p in _PIECES.findall(text))


@dataclass(frozen=True)
class ContextRequest:
    subjects: tuple[str, ...]
    context: Mapping[str, str]
    purpose: str  # "answer" | "action"
    max_tokens: int
    fields: tuple[str, ...] | None = None
    task_id: str | None = None


@dataclass
class _Item:
    section: str
    rank: tuple[Any, ...]
    entry: dict[str, Any]
    line: str
    tokens: int = 0


@dataclass
class _Subject:
    given: str
    entity: Entity | None
    decision: str  # "id" | "matched" | "ambiguous" | "none"
    options: list[dict[str, Any]] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.entity.name if self.entity is not None else self.given


def _subjects(principal: Principal, given: Sequence[str]) -> list[_Subject]:
    """Ids as resolve takes them (another tenant's or unknown: 404; erased: 410); mentions
    through the entity matcher, never merged: ambiguous or unknown ones become questions."""
    ids = [s for s in given if s.startswith("ent_")]
    found = {e.pk: e for e in Entity.objects.filter(tenant=principal.tenant, pk__in=ids)}
    result: list[_Subject] = []
    for text in dict.fromkeys(given):
        if text in found or text.startswith("ent_"):
            entity = found.get(text)
            if entity is None:
                raise NotFound(f"No entity {text}.")
            if entity.erased_at is not None:
                raise Gone(f"Entity {text} was erased.")
            result.append(_Subject(text, entity, "id"))
            continue
        matches = [
            (e, how)
            for e, how in entity_match(principal=principal, name=text, kind=None)
            if e.erased_at is None
        ]
        decision, shown = match_decision(matches)
        if decision == "matched":
            result.append(_Subject(text, shown[0][0], decision))
        else:
            options = [{"id": e.pk, "label": f"{e.name} ({e.kind})"} for e, _ in shown]
            result.append(_Subject(text, None, decision, options))
    return _once_each(result)


def _once_each(subjects: list[_Subject]) -> list[_Subject]:
    """An entity named twice (by id and by name) is answered once."""
    seen: set[str] = set()
    kept = []
    for subject in subjects:
        if subject.entity is not None:
            if subject.entity.pk in seen:
                continue
            seen.add(subject.entity.pk)
        kept.append(subject)
    return kept


def _scope_text(scope: Mapping[str, str]) -> str:
    return ", ".join(f"{d}={v}" for d, v in sorted(scope.items())) or "any context"


def _value_text(value: Any) -> str:
    return canonical_json(value)


def _evidence_text(fact: Mapping[str, Any]) -> str:
    basis = fact.get("basis") or {}
    ref = f"; basis {basis.get('ref')}" if basis.get("ref") else ""
    if ref and basis.get("version"):
        ref += f" v{basis['version']}"
    return f"evidence {', '.join(fact['sources']) or 'none'}{ref}"


def _system_text(system: Mapping[str, Any]) -> str:
    parts = [system["name"]]
    if system.get("tool"):
        parts.append(f"tool {system['tool']}")
    if system.get("url"):
        parts.append(system["url"])
    return ", ".join(parts)


def _fact_items(subject: _Subject, body: Mapping[str, Any], purpose: str) -> list[_Item]:
    items = []
    assert subject.entity is not None  # noqa: S101 - only resolved subjects have a body
    for fact in body["facts"]:
        entry = {
            "subject": subject.entity.pk,
            "subject_name": subject.entity.name,
            **{k: fact[k] for k in _FACT_KEYS},
        }
        head = f"{subject.label} · {fact['field']}"
        labels = (
            f"{fact['kind']}, scope {_scope_text(fact['scope'])}, {fact['verification']}, "
            f"{_evidence_text(fact)}, {fact['memory_id']} v{fact['version']}"
        )
        if fact.get("pending_correction"):
            labels += ", a correction is pending"
        if fact["qualifiers"]:
            labels += f", {', '.join(fact['qualifiers'])}"
        specificity = -len(fact["scope"]) if fact["scope"] != {"tenant": "*"} else 0
        rank = (
            specificity,
            _index(VERIFICATION_RANK, fact["verification"]),
            _index(KIND_RANK, fact["kind"]),
        )
        system = fact.get("authoritative_system")
        if system is not None:
            entry.update(advisory=True, authoritative_system=system, committed=False)
            said = _value_text(fact["value"])
            if purpose == "action":
                line = (
                    f"- [verify first] {head}: do NOT act on memory's {said}; read the "
                    f"committed value from {_system_text(system)} before acting ({labels})."
                )
            else:
                line = (
                    f"- [advisory] {head}: memory says {said}; "
                    f"{advisory_words(system['name'])} ({_system_text(system)}) ({labels})."
                )
            items.append(_Item("advisory", (1, *rank), entry, line))
            continue
        line = f"- [fact] {head} = {_value_text(fact['value'])} ({labels}). {fact['statement']}"
        items.append(_Item("facts", (2, *rank), entry, line))
    return items


_FACT_KEYS = (
    "field",
    "value",
    "statement",
    "memory_id",
    "version",
    "kind",
    "scope",
    "verification",
    "sources",
    "basis",
    "valid_from",
    "valid_to",
    "expires_at",
    "qualifiers",
    "pending_correction",
    "reason",
)


def _index(order: Sequence[str], name: str) -> int:
    return order.index(name) if name in order else len(order)


def _ask_text(name: str, field_name: str, reason: str, detail: str) -> str:
    if reason == "conflict":
        return (
            f"Which {field_name} holds for {name}? Applicable facts disagree ({detail}); "
            "ask before using either."
        )
    if reason == "not_valid_at_time":
        return f"What is {name}'s {field_name} at this time? ({detail}) Ask the user."
    return f"What is {name}'s {field_name} here? ({detail}) Ask the user; do not guess."


def _ask_items(subject: _Subject, body: Mapping[str, Any]) -> list[_Item]:
    items = []
    for abstention in body["abstentions"]:
        question = _ask_text(
            subject.label, abstention["field"], abstention["reason"], abstention["detail"]
        )
        entry = {
            "subject": subject.entity.pk if subject.entity else None,
            "field": abstention["field"],
            "reason": abstention["reason"],
            "detail": abstention["detail"],
            "ask": question,
        }
        items.append(_Item("ask", (0, 1), entry, f"- [ask] {question}"))
    return items


def _subject_question(subject: _Subject) -> _Item:
    if subject.decision == "ambiguous":
        choices = "; ".join(f"{o['label']} [{o['id']}]" for o in subject.options)
        question = f"Which {subject.given!r} do you mean: {choices}?"
        reason = "ambiguous_subject"
    else:
        question = f"Who is {subject.given!r}? No entity has that name; ask, or create it."
        reason = "unknown_subject"
    entry = {
        "subject": None,
        "mention": subject.given,
        "field": None,
        "reason": reason,
        "ask": question,
        "options": subject.options,
    }
    return _Item("ask", (0, 0), entry, f"- [ask] {question}")


def _plan_items(subject: _Subject, body: Mapping[str, Any]) -> list[_Item]:
    items = []
    assert subject.entity is not None  # noqa: S101 - only resolved subjects have a body
    for plan in body["plans"]:
        entry = {"subject": subject.entity.pk, **plan}
        since = f" from {plan['valid_from']}" if plan["valid_from"] else ""
        line = (
            f"- [plan] {subject.label} · {plan['field']}: intends {_value_text(plan['value'])}"
            f"{since} ({plan['memory_id']}); an intention, not a fact."
        )
        items.append(_Item("plans", (4,), entry, line))
    return items


def _applies(scope: Mapping[str, str], context: Mapping[str, str]) -> bool:
    if dict(scope) == {"tenant": "*"}:
        return True
    return all(context.get(d) == v for d, v in scope.items())


def _pending_items(
    principal: Principal,
    subjects: list[_Subject],
    request: ContextRequest,
    answered: Mapping[tuple[str, str], Mapping[str, Any]],
) -> list[_Item]:
    """Proposals under review or checks that apply to this context and would change what is
    answered now (a new value, or a field with no answer). Never their use: only notice."""
    by_id = {s.entity.pk: s for s in subjects if s.entity is not None}
    if not by_id:
        return []
    rows = MemoryVersion.objects.filter(
        VisibleTo(principal),
        tenant=principal.tenant,
        subject_id__in=list(by_id),
        status__in=_PENDING,
    ).only(
        "item_id",
        "number",
        "subject_id",
        "field",
        "value",
        "statement",
        "scope",
        "status",
        "assertion",
        "required_visibility",
    )
    if request.fields:
        rows = rows.filter(field__in=request.fields)
    items = []
    for version in rows.order_by("item_id", "number"):
        subject_id = str(version.subject_id)
        if not _applies(version.scope, request.context):
            continue
        now = answered.get((subject_id, version.field))
        if now is not None and canonical_json(now["value"]) == canonical_json(version.value):
            continue
        effect = "may_replace" if now is not None else "may_answer"
        entry = {
            "subject": subject_id,
            "field": version.field,
            "memory_id": version.item_id,
            "version": version.number,
            "status": version.status,
            "statement": version.statement,
            "effect": effect,
            "replaces": now["memory_id"] if now is not None else None,
        }
        what = f"may replace {now['memory_id']}" if now is not None else "may answer it"
        line = (
            f"- [pending] {by_id[subject_id].label} · {version.field}: {version.item_id} "
            f"v{version.number} ({version.status}) {what} once approved; not in use yet: "
            f"{version.statement}"
        )
        items.append(_Item("pending", (3,), entry, line))
    return items


def _header(request: ContextRequest, policy_version: str) -> str:
    purpose = (
        "before an action: act only on [fact] lines; [verify first] values must be read "
        "from their system"
        if request.purpose == "action"
        else "to answer: use [fact] lines; [advisory] values are memory, not the record"
    )
    return (
        f"Memgov context (purpose {request.purpose}; context {_scope_text(request.context)}; "
        f"policy {policy_version}). Governed memory {purpose}; [ask] lines are questions to "
        "ask instead of guessing; [pending] proposals are not in use."
    )


def _cut_note(cut: list[_Item], budget: int) -> str:
    counts: dict[str, int] = {}
    for item in cut:
        counts[item.section] = counts.get(item.section, 0) + 1
    listed = ", ".join(f"{n} {section}" for section, n in counts.items())
    return (
        f"[cut to fit {budget} tokens: {listed} left out, lowest ranked first; ask again "
        "with a larger max_tokens or fewer subjects]"
    )


def _fit(items: list[_Item], budget: int, header_tokens: int) -> tuple[list[_Item], list[_Item]]:
    """Items in rank order while they fit; from the first that does not, all are cut (the
    order is the ranking: a lower item never displaces a higher one)."""
    for item in items:
        item.tokens = estimate_tokens(item.line) + 1  # the line break
    if header_tokens + sum(i.tokens for i in items) <= budget:
        return items, []
    kept: list[_Item] = []
    used = header_tokens
    for position, item in enumerate(items):
        remaining = items[position:]
        note = estimate_tokens(_cut_note(remaining, budget)) + 1
        if used + item.tokens + note > budget:
            return kept, remaining
        kept.append(item)
        used += item.tokens
    return kept, []


def build_context(principal: Principal, request: ContextRequest) -> dict[str, Any]:
    now = timezone.now()
    subjects = _subjects(principal, request.subjects)
    items: list[_Item] = []
    answered: dict[tuple[str, str], Mapping[str, Any]] = {}
    policy_version: str | None = None
    for order, subject in enumerate(subjects):
        if subject.entity is None:
            items.append(_subject_question(subject))
            continue
        answer = resolution.cached_resolution(
            principal,
            resolution.ResolveRequest(
                subject=subject.entity.pk,
                context=request.context,
                fields=request.fields,
                valid_at=None,
                known_at=None,
                task_id=None,
                explain=False,
            ),
            now,
        )
        policy_version = policy_version or answer["policy_version"]
        for fact in answer["facts"]:
            answered[(subject.entity.pk, fact["field"])] = fact
        found = [
            *_ask_items(subject, answer),
            *_fact_items(subject, answer, request.purpose),
            *_plan_items(subject, answer),
        ]
        for item in found:  # subjects in the order given, within a section's rank
            item.rank = (item.rank[0], order, *item.rank[1:], item.entry.get("field") or "")
        items += found
    items += _pending_items(principal, subjects, request, answered)
    if policy_version is None:
        policy_version = str(current_policy(principal.tenant).version)
    items.sort(key=lambda i: i.rank)
    header = _header(request, policy_version)
    kept, cut = _fit(items, request.max_tokens, estimate_tokens(header) + 1)
    lines = [header, *(i.line for i in kept)]
    if cut:
        lines.append(_cut_note(cut, request.max_tokens))
    text = "\n".join(lines)
    body: dict[str, Any] = {
        "purpose": request.purpose,
        "context": dict(request.context),
        "policy_version": policy_version,
        "retrieval_id": None,
        "subjects": [
            {
                "given": s.given,
                "id": s.entity.pk if s.entity else None,
                "name": s.entity.name if s.entity else None,
                "decision": s.decision,
            }
            for s in subjects
        ],
        **{section: [i.entry for i in kept if i.section == section] for section in SECTIONS},
        "cut": [
            {
                "section": i.section,
                "subject": i.entry.get("subject"),
                "field": i.entry.get("field"),
                "memory_id": i.entry.get("memory_id"),
                "tokens": i.tokens,
            }
            for i in cut
        ],
        "tokens": {
            "budget": request.max_tokens,
            "used": estimate_tokens(text),
            "estimator": ESTIMATOR,
        },
        "text": text,
    }
    if request.task_id:
        told = [*body["facts"], *body["advisory"]]
        record = resolution.retrieval_record(
            principal=principal,
            task_id=request.task_id,
            policy_version=policy_version,
            context=request.context,
            facts=told,
        )
        body["retrieval_id"] = record.pk
    return body
