"""What the item page shows of other memories: the Impact box (per context, what agents
are told now and after activation) and the memories a check names. Values and statements
are shown only to a reviewer who may see them (``core.authority.labels_visible``); the
stored checks carry ids alone."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from accounts.keys import agent_keys_by_labels
from approvals.checking import impact_now_seen_by
from approvals.checks import ContextImpact
from approvals.explain import is_tie, why_failed
from core.authority import labels_visible, version_visible
from core.principals import Principal
from memory.models import MemoryVersion, Source, Status
from memory.resolver import Candidate

# Statuses whose impact means something: still to be activated, or in use now.
SHOWN_FOR = frozenset({Status.PENDING_REVIEW, Status.CHECKING, Status.CHECKS_FAILED, Status.ACTIVE})
ABSTAINS = {
    "conflict": "no answer: equally ranked memories give different values (a conflict)",
    "no_applicable_fact": "nothing: no memory of this field applies here",
    "not_valid_at_time": "nothing: the memory here is not valid at this time",
}
VERSION_REF = re.compile(r"\b(mem_[0-9a-z]+)(?: v(\d+))?")


@dataclass(frozen=True)
class Told:
    """One answer as a reviewer reads it."""

    memory_id: str | None = None
    number: int | None = None
    kind: str = ""
    value: str = ""
    statement: str = ""
    sources: tuple[str, ...] = ()
    reason: str = ""
    hidden: bool = False
    is_this: bool = False


@dataclass(frozen=True)
class ImpactRow:
    context: dict[str, str]
    own_scope: bool
    before: Told
    after: Told
    outranked: tuple[Told, ...]
    changed: bool
    tie: bool = False  # after activation, equally ranked values: agents get no answer


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _source_names(candidates: Iterable[Candidate], tenant_id: int) -> dict[str, str]:
    """``src_…`` → "approval_record APR-2291 v3" for every cited source, in one query."""
    wanted = {pk for c in candidates for pk in c.source_ids}
    rows = Source.objects.filter(tenant_id=tenant_id, pk__in=wanted).only(
        "pk", "kind", "external_ref", "version"
    )
    names = {}
    for source in rows:
        ref = f" {source.external_ref}" if source.external_ref else ""
        number = f" v{source.version}" if source.external_ref and source.version else ""
        names[source.pk] = f"{source.kind.replace('_', ' ')}{ref}{number}"  # "business record"
    return names


def _told(
    candidate: Candidate | None,
    reason: str,
    principal: Principal,
    version: MemoryVersion,
    sources: dict[str, str],
) -> Told:
    if candidate is None:
        return Told(reason=ABSTAINS.get(reason, reason))
    if not labels_visible(candidate.visibility, principal):
        return Told(hidden=True, reason=reason)
    return Told(
        memory_id=candidate.memory_id,
        number=candidate.version,
        kind=candidate.kind,
        value=_value(candidate.value),
        statement=candidate.statement,
        sources=tuple(sources.get(pk, "a source") for pk in candidate.source_ids),
        reason=reason,
        is_this=(candidate.memory_id, candidate.version) == (version.item_id, version.number),
    )


def _rows(
    found: list[ContextImpact],
    principal: Principal,
    version: MemoryVersion,
    sources: dict[str, str],
) -> tuple[ImpactRow, ...]:
    return tuple(
        ImpactRow(
            context=entry.context,
            own_scope=entry.own_scope,
            before=_told(entry.before, entry.before_reason, principal, version, sources),
            after=_told(entry.after, entry.after_reason, principal, version, sources),
            outranked=tuple(
                _told(c, "outranked", principal, version, sources) for c in entry.outranked
            ),
            changed=entry.changed,
            tie=entry.after is None and entry.after_reason == "conflict",
        )
        for entry in found
    )


# How many keys a view names before "and N more".
KEYS_NAMED = 6


@dataclass(frozen=True)
class AgentView:
    """What one group of the tenant's agent keys is told: resolve filters by a key's
    labels, so keys holding different labels can be told different things (issue 43,
    point 5). One view per distinct answer; the label sets and keys that share it."""

    label_sets: tuple[tuple[str, ...], ...]
    keys: tuple[str, ...]
    key_count: int
    rows: tuple[ImpactRow, ...]
    everyone: bool = False  # every agent key of the tenant is told this
    no_keys: bool = False  # the tenant has no agent key that resolves now

    @property
    def who(self) -> str:
        """Whose view this is, in words: "agents with the label staff"."""
        if self.no_keys:
            return "an agent allowed to see this memory"
        return "agents " + ", or ".join(_labels_words(labels) for labels in self.label_sets)

    @property
    def whose(self) -> str:
        if self.no_keys:
            return (
                "No agent key of this tenant can resolve now; shown as an agent allowed to "
                "see this memory would be told it."
            )
        if self.everyone:
            return f"Every agent key of this tenant is told the same: shown as {self.who} see it."
        return f"As {self.who} see it."

    @property
    def more_keys(self) -> int:
        return self.key_count - len(self.keys)


def _labels_words(labels: tuple[str, ...]) -> str:
    if not labels:
        return "with no label"
    if len(labels) == 1:
        return f"with the label {labels[0]}"
    return f"with the labels {', '.join(labels[:-1])} and {labels[-1]}"


def _key_name(key: Any) -> str:
    return f"{key.agent_name} (key {key.prefix}…)"


def impact_views(principal: Principal, version: MemoryVersion) -> list[AgentView] | None:
    """What agents are told now and after activation, per context, once for each answer
    the tenant's agent keys get: keys are grouped by their labels, each set of labels
    asked as resolve asks it, and sets told the same thing share one view, which names
    them and their keys. None when impact means nothing for this version (held,
    decided, over)."""
    if version.status not in SHOWN_FOR or version.subject_id is None:
        return None
    groups = agent_keys_by_labels(version.tenant_id)
    ordered = sorted(groups, key=lambda labels: (len(labels), sorted(labels)))
    asked: list[frozenset[str] | None] = list(ordered) or [None]
    answers = impact_now_seen_by(version, asked)
    everyone = [
        c
        for found in answers
        for i in found
        for c in (i.before, i.after, *i.outranked)
        if c is not None
    ]
    sources = _source_names(everyone, version.tenant_id)
    if not ordered:
        rows = _rows(answers[0], principal, version, sources)
        return [AgentView((), (), 0, rows, no_keys=True)]
    # Label sets told the same (ids and reasons, context by context) share a view.
    shared: dict[str, list[int]] = {}
    for at, found in enumerate(answers):
        told = json.dumps([i.as_dict() for i in found], sort_keys=True)
        shared.setdefault(told, []).append(at)
    views = []
    for members in shared.values():
        keys = [key for at in members for key in groups[ordered[at]]]
        views.append(
            AgentView(
                label_sets=tuple(tuple(sorted(ordered[at])) for at in members),
                keys=tuple(_key_name(key) for key in keys[:KEYS_NAMED]),
                key_count=len(keys),
                rows=_rows(answers[members[0]], principal, version, sources),
                everyone=len(shared) == 1,
            )
        )
    return views


def impact_rows(principal: Principal, version: MemoryVersion) -> list[ImpactRow] | None:
    """Every view's rows together (ties are found in any of them); None when impact
    means nothing for this version."""
    return view_rows(impact_views(principal, version))


def view_rows(views: list[AgentView] | None) -> list[ImpactRow] | None:
    return None if views is None else [row for view in views for row in view.rows]


def tied_with(rows: Iterable[ImpactRow] | None) -> dict[str, Told]:
    """The memories this version would tie with, by id: those it could replace."""
    return {
        t.memory_id: t
        for row in rows or ()
        if row.tie
        for t in row.outranked
        if t.memory_id and not t.hidden
    }


@dataclass(frozen=True)
class Mention:
    """A memory a check's detail names, as a reviewer may read it."""

    memory_id: str
    number: int | None
    statement: str = ""
    value: str = ""
    kind: str = ""
    hidden: bool = False
    is_this: bool = False


def mentioned(
    principal: Principal, version: MemoryVersion, texts: Iterable[str]
) -> dict[str, Mention]:
    """Every ``mem_… vN`` the texts name, resolved to its statement and value in one
    query; one the reviewer may not see is marked hidden (its content stays out)."""
    refs = {
        (m.group(1), int(m.group(2) or 0)) for text in texts for m in VERSION_REF.finditer(text)
    }
    if not refs:
        return {}
    rows = MemoryVersion.objects.filter(
        tenant_id=version.tenant_id, item_id__in={item for item, _ in refs}
    ).only("item_id", "number", "statement", "value", "kind", "required_visibility")
    by_key = {(v.item_id, v.number): v for v in rows}
    heads: dict[str, MemoryVersion] = {}
    for v in by_key.values():
        if v.item_id not in heads or v.number > heads[v.item_id].number:
            heads[v.item_id] = v
    found = {}
    for item_id, number in refs:
        row = by_key.get((item_id, number)) or heads.get(item_id)
        key = f"{item_id} v{number}" if number else item_id
        if row is None:
            continue
        if not version_visible(row, principal):
            found[key] = Mention(item_id, number or None, hidden=True)
            continue
        found[key] = Mention(
            memory_id=item_id,
            number=row.number,
            statement=row.statement,
            value=_value(row.value),
            kind=row.kind,
            is_this=(item_id, row.number) == (version.item_id, version.number),
        )
    return found


@dataclass(frozen=True)
class CheckView:
    result: Any
    why: str
    parts: tuple[tuple[str, Mention | None], ...]
    other: Mention | None


def _parts(text: str, found: dict[str, Mention]) -> tuple[tuple[str, Mention | None], ...]:
    """The detail as text and the memories it names, so each renders as a link with its
    statement instead of a bare id."""
    parts: list[tuple[str, Mention | None]] = []
    at = 0
    for match in VERSION_REF.finditer(text):
        key = match.group(0)
        mention = found.get(key)
        if mention is None:
            continue
        parts.append((text[at : match.start()], None))
        parts.append((key, mention))
        at = match.end()
    parts.append((text[at:], None))
    return tuple(p for p in parts if p[0])


def check_views(
    principal: Principal, version: MemoryVersion, results: Iterable[Any]
) -> list[CheckView]:
    results = list(results)
    texts = [r.detail for r in results] + [
        str(r.scenario.get("regression_of")) for r in results if r.scenario.get("regression_of")
    ]
    found = mentioned(principal, version, texts)
    tied = {(r.run, r.policy_version) for r in results if is_tie(r)}  # runs that found a tie
    views = []
    for r in results:
        other_id = r.scenario.get("regression_of")
        views.append(
            CheckView(
                result=r,
                why=(
                    why_failed(r.scenario, tied=(r.run, r.policy_version) in tied)
                    if r.outcome == "failed"
                    else ""
                ),
                parts=_parts(r.detail, found),
                other=found.get(str(other_id)) if other_id else None,
            )
        )
    return views
