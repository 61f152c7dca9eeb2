"""The context block (docs/api.md, Context): what an agent may put in a prompt about some
subjects for a task, governed as resolve is (seed 002: scope by tenant and subject before
ranking; a bounded, labelled context; verified records stay authoritative; ask rather than
guess).

Each subject is answered by the resolver exactly as ``POST /resolve`` answers it (the same
cache, the same labels), then the block adds what an agent needs around the facts: the
questions to ask instead of guessing, proposals still pending that may change an answer,
and, for a field whose committed state another system holds (field catalog), a note that
memory is only advisory. Items are ranked and fitted to ``max_tokens`` counted exactly by
the caller's encoding (cl100k_base or o200k_base, whose tables ship in the bpe-openai wheel:
no download); an item that does not fit is shortened to its value and id, or else left out
alone while smaller ones still fill the budget, and what was cut is said (issue 44). With a
``task_id`` the block is recorded as a retrieval, as resolve records one, so ``check_task``
covers it."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from audit.chain import canonical_json
from core.errors import Gone, NotFound
from core.principals import Principal, can_see
from memory import resolution
from memory.catalog import advisory_words
from memory.models import Entity, MemoryVersion, Source, Status
from memory.references import REFERENCE_KEY, found_in
from memory.resolver import KIND_RANK, PENDING_CORRECTION, VERIFICATION_RANK
from memory.selectors import current_policy, entity_match, match_decision
from memory.visibility import VisibleTo

ENCODINGS = ("cl100k_base", "o200k_base")
DEFAULT_ENCODING = "cl100k_base"
# Pending proposals that may still change an answer (not held: those ask a question first).
_PENDING = (Status.PENDING_REVIEW, Status.CHECKING)
SECTIONS = ("ask", "advisory", "facts", "pending", "plans")


@functools.cache
def _encoder(encoding: str) -> Any:
    """Loaded once a process, on its first block: imported lazily because it costs memory
    (measured: about 65 MB resident for the import, 20 MB more for cl100k_base, 45 MB for
    o200k_base), which processes that never build a block (workers, commands) keep."""
    import bpe_openai  # noqa: PLC0415 - only the context block needs it

    return bpe_openai.get_encoding(encoding)


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Exact: the encoding's BPE over the text, special-token strings counted as text."""
    return len(_encoder(encoding).encode_ordinary(text))


@functools.cache
def counter_name(encoding: str) -> str:
    from importlib.metadata import version  # noqa: PLC0415

    return f"{encoding} (bpe-openai {version('bpe-openai')}): exact count of text"


@dataclass(frozen=True)
class ContextRequest:
    subjects: tuple[str, ...]
    context: Mapping[str, str]
    purpose: str  # "answer" | "action"
    max_tokens: int
    fields: tuple[str, ...] | None = None
    task_id: str | None = None
    encoding: str = DEFAULT_ENCODING


@dataclass
class _Item:
    section: str
    rank: tuple[Any, ...]
    entry: dict[str, Any]
    line: str
    tokens: int = 0
    short: str | None = None  # the line shortened to its value and id, when it does not fit
    short_tokens: int = 0
    shortened: bool = False

    @property
    def said(self) -> str:
        return self.short if self.shortened and self.short else self.line


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


@dataclass
class _Labels:
    """What the lines name besides ids, read in two queries a block: referenced entities'
    names and the sources' external references the caller may see."""

    entities: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)


def _labels(principal: Principal, facts: Sequence[Mapping[str, Any]]) -> _Labels:
    refs = {ref for f in facts for _p, ref in found_in(f["value"]) if isinstance(ref, str)}
    source_ids = {s for f in facts for s in f.get("sources", ())}
    labels = _Labels()
    if refs:
        labels.entities = dict(
            Entity.objects.filter(
                tenant=principal.tenant, pk__in=refs, erased_at__isnull=True
            ).values_list("pk", "name")
        )
    if source_ids:
        rows = Source.objects.filter(tenant=principal.tenant, pk__in=source_ids).values_list(
            "pk", "external_ref", "visibility"
        )
        labels.sources = {
            pk: ref for pk, ref, seen in rows if ref and can_see(seen, principal.labels)
        }
    return labels


def _named(value: Any, names: Mapping[str, str]) -> Any:
    """A reference ``{"entity": id}`` reads as "Name (id)"."""
    if isinstance(value, dict):
        if set(value) == {REFERENCE_KEY} and isinstance(value[REFERENCE_KEY], str):
            ref = value[REFERENCE_KEY]
            return f"{names[ref]} ({ref})" if ref in names else ref
        return {k: _named(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_named(v, names) for v in value]
    return value


def _value_text(value: Any, names: Mapping[str, str] | None = None) -> str:
    if not names:
        return canonical_json(value)
    shown = _named(value, names)
    if isinstance(value, dict) and set(value) == {REFERENCE_KEY}:
        return str(shown)  # the whole value is one entity: its name, unquoted
    return canonical_json(shown)


def _evidence_text(fact: Mapping[str, Any], sources: Mapping[str, str]) -> str:
    basis = fact.get("basis") or {}
    ref = f"; basis {basis.get('ref')}" if basis.get("ref") else ""
    if ref and basis.get("version"):
        ref += f" v{basis['version']}"
    said = [f"{s} ({sources[s]})" if s in sources else s for s in fact["sources"]]
    return f"evidence {', '.join(said) or 'none'}{ref}"


def _when_text(fact: Mapping[str, Any]) -> str:
    """Validity only where it is known: most facts have no start (``valid_from_unknown`` in
    the JSON), and saying so on every line drowns the lines that differ."""
    parts = []
    if fact.get("valid_from"):
        parts.append(f"from {fact['valid_from']}")
    if fact.get("valid_to"):
        parts.append(f"until {fact['valid_to']}")
    return ", " + " ".join(parts) if parts else ""


def _system_text(system: Mapping[str, Any]) -> str:
    parts = [system["name"]]
    if system.get("tool"):
        parts.append(f"tool {system['tool']}")
    if system.get("url"):
        parts.append(system["url"])
    return ", ".join(parts)


_CLIP = 32  # characters of a value a shortened line keeps


def _clipped(said: str) -> str:
    if len(said) <= _CLIP:
        return said
    return said[: _CLIP - 2] + '…"' if said.startswith('"') else said[: _CLIP - 1] + "…"


def _fact_items(
    subject: _Subject, body: Mapping[str, Any], purpose: str, labels: _Labels
) -> list[_Item]:
    items = []
    assert subject.entity is not None  # noqa: S101 - only resolved subjects have a body
    for fact in body["facts"]:
        entry = {
            "subject": subject.entity.pk,
            "subject_name": subject.entity.name,
            **{k: fact[k] for k in _FACT_KEYS},
        }
        head = f"{subject.label} · {fact['field']}"
        pending = bool(fact.get("pending_correction")) or PENDING_CORRECTION in fact["qualifiers"]
        said = _value_text(fact["value"], labels.entities)
        tags = (
            f"{fact['kind']}, scope {_scope_text(fact['scope'])}, {fact['verification']}"
            f"{_when_text(fact)}, {_evidence_text(fact, labels.sources)}, "
            f"{fact['memory_id']} v{fact['version']}"
        )
        if pending:
            tags += ", a correction is pending"
        specificity = -len(fact["scope"]) if fact["scope"] != {"tenant": "*"} else 0
        rank = (
            specificity,
            _index(VERIFICATION_RANK, fact["verification"]),
            _index(KIND_RANK, fact["kind"]),
        )
        system = fact.get("authoritative_system")
        if system is not None:
            entry.update(advisory=True, authoritative_system=system, committed=False)
            if purpose == "action":
                line = (
                    f"- [verify first] {head}: do NOT act on memory's {said}; read the "
                    f"committed value from {_system_text(system)} before acting ({tags})."
                )
            else:
                line = (
                    f"- [advisory] {head}: memory says {said}; "
                    f"{advisory_words(system['name'])} ({_system_text(system)}) ({tags})."
                )
            short = (
                f"- [{'verify first' if purpose == 'action' else 'advisory'}] {head}: memory "
                f"says {_clipped(said)}; {system['name']} holds the record "
                f"(shortened: get_memory {fact['memory_id']})."
            )
            items.append(_Item("advisory", (1, *rank), entry, line, short=short))
            continue
        tag = "verify first" if pending and purpose == "action" else "fact"
        short = f"- [{tag}] {head} = {_clipped(said)} (shortened: get_memory {fact['memory_id']})."
        if pending and purpose == "action":  # the value may change: not one to act on yet
            line = (
                f"- [verify first] {head} = {said} ({tags}): confirm it, or wait for the "
                f"correction's review, before acting. {fact['statement']}"
            )
        else:
            line = f"- [fact] {head} = {said} ({tags}). {fact['statement']}"
        items.append(_Item("facts", (2, *rank), entry, line, short=short))
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


def _plan_items(
    subject: _Subject, body: Mapping[str, Any], names: Mapping[str, str]
) -> list[_Item]:
    items = []
    assert subject.entity is not None  # noqa: S101 - only resolved subjects have a body
    for plan in body["plans"]:
        entry = {"subject": subject.entity.pk, **plan}
        since = f" from {plan['valid_from']}" if plan["valid_from"] else ""
        line = (
            f"- [plan] {subject.label} · {plan['field']}: intends "
            f"{_value_text(plan['value'], names)}{since} ({plan['memory_id']}); an intention, "
            "not a fact."
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


_LEGEND = {
    "fact": "use [fact] lines",
    "verify first": "[verify first]: check before acting",
    "advisory": "[advisory]: memory, not the record",
    "ask": "[ask]: ask, never guess",
    "pending": "[pending]: not in use",
}


def _header(request: ContextRequest, policy_version: str, items: Sequence[_Item]) -> str:
    """Compact, so that the header and a cut line leave room in the smallest budget: the
    legend names only the tags the block may show, the context is named when short, else
    counted (it is in the JSON either way)."""
    tags = {i.line[3 : i.line.index("]")] for i in items}
    legend = "; ".join(words for tag, words in _LEGEND.items() if tag in tags)
    if request.purpose == "action":
        legend = legend.replace("use [fact] lines", "act only on [fact] lines")
    scope = _scope_text(request.context)
    if count_tokens(scope, request.encoding) > _CONTEXT_SHOWN:
        scope = f"{len(request.context)} dimensions"
    header = f"Memgov context ({request.purpose}; {scope}; policy {policy_version})"
    return f"{header}: {legend}." if legend else f"{header}."


_CONTEXT_SHOWN = 24  # tokens of "d=v, …" the header repeats; a longer context is counted


def _cut_note(cut: list[_Item], budget: int) -> str:
    counts: dict[str, int] = {}
    for item in cut:
        counts[item.section] = counts.get(item.section, 0) + 1
    listed = ", ".join(f"{n} {_counted(section, n)}" for section, n in counts.items())
    return f"[cut to fit {budget} tokens: {listed} left out; see cut]"


# How one left-out item of a section is counted: "1 fact left out", "3 facts left out".
_ONE = {"facts": "fact", "plans": "plan"}


def _counted(section: str, n: int) -> str:
    return _ONE.get(section, section) if n == 1 else section


def _fit(
    items: list[_Item], budget: int, header: str, encoding: str
) -> tuple[list[_Item], list[_Item], str]:
    """Items in rank order, each kept if it fits in what is left, else shortened if that
    fits, else cut alone: smaller, lower ones still fill the budget. Lines are counted one
    by one, then the joined text once more (BPE may merge across a line break): ``used <=
    budget``."""
    for item in items:
        item.tokens = count_tokens(item.line + "\n", encoding)
        if item.short:
            item.short_tokens = count_tokens(item.short + "\n", encoding)
    room = budget - count_tokens(header + "\n", encoding)
    kept, cut = _greedy(items, room)
    reserve = 0
    while cut:  # the cut line takes room too; a longer one can cut more
        need = count_tokens("\n" + _cut_note(cut, budget), encoding)
        if need <= reserve:
            break
        reserve = need
        kept, cut = _greedy(items, room - reserve)
    text = _text(header, kept, cut, budget)
    while count_tokens(text, encoding) > budget and kept:
        cut = sorted([*cut, kept.pop()], key=lambda i: i.rank)
        text = _text(header, kept, cut, budget)
    return kept, cut, text


def _greedy(items: list[_Item], room: int) -> tuple[list[_Item], list[_Item]]:
    kept: list[_Item] = []
    cut: list[_Item] = []
    for item in items:
        item.shortened = item.tokens > room and bool(item.short) and item.short_tokens <= room
        if item.tokens <= room or item.shortened:
            kept.append(item)
            room -= item.short_tokens if item.shortened else item.tokens
        else:
            cut.append(item)
    return kept, cut


def _text(header: str, kept: list[_Item], cut: list[_Item], budget: int) -> str:
    lines = [header, *(i.said for i in kept)]
    if cut:
        lines.append(_cut_note(cut, budget))
    return "\n".join(lines)


def _nothing_applies(subject: _Subject, order: int) -> _Item:
    """A subject with nothing to say still gets its line: silence would read as forgotten."""
    assert subject.entity is not None  # noqa: S101 - only resolved subjects are answered
    entry = {"subject": subject.entity.pk, "field": None, "memory_id": None}
    line = f"- [none] {subject.label}: nothing applies in this context."
    return _Item("note", (2, order), entry, line)


def build_context(principal: Principal, request: ContextRequest) -> dict[str, Any]:
    now = timezone.now()
    subjects = _subjects(principal, request.subjects)
    items: list[_Item] = []
    answered: dict[tuple[str, str], Mapping[str, Any]] = {}
    policy_version: str | None = None
    answers: dict[int, Mapping[str, Any]] = {}
    for order, subject in enumerate(subjects):
        if subject.entity is None:
            items.append(_subject_question(subject))
            continue
        answers[order] = answer = resolution.cached_resolution(
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
    labels = _labels(principal, [v for a in answers.values() for v in (*a["facts"], *a["plans"])])
    for order, resolved in answers.items():
        subject = subjects[order]
        found = [
            *_ask_items(subject, resolved),
            *_fact_items(subject, resolved, request.purpose, labels),
            *_plan_items(subject, resolved, labels.entities),
        ]
        for item in found:  # subjects in the order given, within a section's rank
            item.rank = (item.rank[0], order, *item.rank[1:], item.entry.get("field") or "")
        items += found
    items += _pending_items(principal, subjects, request, answered)
    said = {i.entry.get("subject") for i in items}
    items += [
        _nothing_applies(subjects[order], order)
        for order in answers
        if subjects[order].entity.pk not in said  # type: ignore[union-attr]
    ]
    if policy_version is None:
        policy_version = str(current_policy(principal.tenant).version)
    items.sort(key=lambda i: i.rank)
    header = _header(request, policy_version, items)
    kept, cut, text = _fit(items, request.max_tokens, header, request.encoding)
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
            "used": count_tokens(text, request.encoding),
            "encoding": request.encoding,
            "estimator": counter_name(request.encoding),
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
