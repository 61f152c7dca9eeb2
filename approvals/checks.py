"""Scenario checks (DESIGN.md, Scenario checks), run through the resolver agents use.

Every scenario asks the real candidate query and the pure resolver a question with the
version under check treated as active, and compares the answer with what must happen."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from audit.chain import digest
from memory import resolver
from memory.candidates import CandidateRequest, load_candidates
from memory.models import MemoryKind, MemoryVersion, Scenario, ScopeValue, Status
from memory.rules import TENANT_WIDE

ONE_DAY = timedelta(days=1)
OTHER_TENANT_ID = -1  # no tenant has it: "another tenant" must find nothing of ours
OTHER_SUBJECT = "ent_scenario_other_subject"


@dataclass(frozen=True)
class Spec:
    """One scenario: a question and the expected fate of the version under check."""

    name: str
    kind: str  # applicable | inapplicable | revoked | regression | custom
    context: dict[str, str]
    valid_at: datetime
    expect: str  # applies | does_not_apply | no_new_conflict
    generated: bool = True
    tenant_id: int | None = None
    subject_id: str | None = None
    revoke_basis: bool = False
    regression_of: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "context": self.context,
            "valid_at": self.valid_at.isoformat(),
            "expect": self.expect,
            "tenant": "other" if self.tenant_id == OTHER_TENANT_ID else "same",
            "subject": self.subject_id or "same",
            "revoke_basis": self.revoke_basis,
            "regression_of": self.regression_of,
        }

    @property
    def key(self) -> str:
        """The scenario's identity, without its time: a generated scenario asks at "now",
        and a run delivered twice must rewrite its rows, not add a second set (names are
        unique within a run, and a fixed custom time belongs to a custom #id)."""
        identity = self.as_dict()
        del identity["valid_at"]
        return digest(identity)


@dataclass
class Outcome:
    spec: Spec
    passed: bool
    detail: str
    impact: list[dict[str, Any]] = field(default_factory=list)


def inside_validity(version: MemoryVersion, now: datetime) -> datetime:
    """A time the item claims to hold: now when open, else a moment inside the interval."""
    start, end = version.valid_from, version.valid_to
    if (start is None or start <= now) and (end is None or now < end):
        return now
    if start is not None:
        return start
    assert end is not None  # noqa: S101 - otherwise now was inside
    return end - timedelta(seconds=1)


def outside_validity(version: MemoryVersion) -> datetime | None:
    """A time the item must not answer for; a plan is listed before it starts, so only
    after its end is outside (resolver.is_pending_plan)."""
    if version.valid_from is not None and version.assertion != "plan":
        return version.valid_from - ONE_DAY
    if version.valid_to is not None:
        return version.valid_to + ONE_DAY
    return None


def _context_for(scope: dict[str, str]) -> dict[str, str]:
    return {} if scope == TENANT_WIDE else dict(scope)


def _sibling(version: MemoryVersion, dimension: str, value: str) -> str:
    """A real other value seen in the tenant when one exists, else a made-up one."""
    other = (
        ScopeValue.objects.filter(tenant_id=version.tenant_id, dimension=dimension)
        .exclude(value=value)
        .order_by("value")
        .values_list("value", flat=True)
        .first()
    )
    return other or f"{value}~other"


def generated_specs(version: MemoryVersion, now: datetime) -> Iterator[Spec]:
    context = _context_for(version.scope)
    inside = inside_validity(version, now)
    yield Spec("applicable: its own scope", "applicable", context, inside, "applies")
    for dim, value in sorted(context.items()):
        moved = {**context, dim: _sibling(version, dim, value)}
        yield Spec(
            f"inapplicable: {dim} moved to a sibling",
            "inapplicable",
            moved,
            inside,
            "does_not_apply",
        )
    yield Spec(
        "inapplicable: another subject",
        "inapplicable",
        context,
        inside,
        "does_not_apply",
        subject_id=OTHER_SUBJECT,
    )
    yield Spec(
        "inapplicable: another tenant",
        "inapplicable",
        context,
        inside,
        "does_not_apply",
        tenant_id=OTHER_TENANT_ID,
    )
    outside = outside_validity(version)
    if outside is not None:
        yield Spec(
            "inapplicable: outside its validity", "inapplicable", context, outside, "does_not_apply"
        )
    if version.source_ids:
        yield Spec(
            "revoked: basis withdrawn",
            "revoked",
            context,
            inside,
            "does_not_apply",
            revoke_basis=True,
        )
    yield from _regression_specs(version, now)


def _regression_specs(version: MemoryVersion, now: datetime) -> Iterator[Spec]:
    others = (
        MemoryVersion.objects.filter(
            tenant_id=version.tenant_id,
            subject_id=version.subject_id,
            field=version.field,
            status=Status.ACTIVE,
        )
        .exclude(item_id=version.item_id)
        .order_by("item_id")
    )
    for other in others:
        yield Spec(
            f"regression: {other.item_id} v{other.number} still resolves",
            "regression",
            _context_for(other.scope),
            inside_validity(other, now),
            "no_new_conflict",
            regression_of=other.item_id,
        )


def custom_specs(version: MemoryVersion, now: datetime) -> Iterator[Spec]:
    scenarios = Scenario.objects.filter(
        version__item_id=version.item_id, version__number__lte=version.number
    ).order_by("pk")
    for s in scenarios:
        yield Spec(
            f"custom #{s.pk} ({s.created_by})",
            s.kind,
            dict(s.context),
            s.valid_at or inside_validity(version, now),
            s.expect,
            generated=False,
            revoke_basis=s.kind == Scenario.Kind.REVOKED,
        )


def _ask(
    version: MemoryVersion,
    spec: Spec,
    policy: resolver.Policy,
    now: datetime,
    *,
    with_version: bool,
) -> resolver.Resolution:
    request = CandidateRequest(
        tenant_id=spec.tenant_id if spec.tenant_id is not None else version.tenant_id,
        subject_id=spec.subject_id or str(version.subject_id),
        fields=(version.field,),
        context=spec.context,
        known_at=now,
        include=version.pk if with_version else None,
        exclude_item=version.item_id if with_version else None,
        revoked_sources=version.source_ids if spec.revoke_basis else (),
    )
    query = resolver.Query(
        context=spec.context,
        valid_at=spec.valid_at,
        known_at=now,
        labels=frozenset({"*"}) | _all_labels(version),
        fields=(version.field,),
    )
    candidates = load_candidates(request)
    if with_version:
        verification = verification_when_active(version)
        candidates = [
            replace(c, verification=verification) if c.memory_id == version.item_id else c
            for c in candidates
        ]
    return resolver.resolve(candidates, query, policy)


def verification_when_active(version: MemoryVersion) -> str:
    """A preview runs before the approval that raises ``asserted``: it must rank the item
    as activation will, or the reviewer is shown a failure and no impact where the gate
    will find a new winner (DESIGN.md: the reviewer sees the impact before approving)."""
    from approvals.services import _verification_on_approval

    if version.kind == MemoryKind.PREFERENCE or version.status not in (
        Status.PENDING_REVIEW,
        Status.HELD_UNRESOLVED,
    ):
        return version.verification
    return _verification_on_approval(version)


def _all_labels(version: MemoryVersion) -> frozenset[str]:
    """Checks look at what the resolver does, not at who may see it: every label it needs."""
    return frozenset(label for labels in version.required_visibility for label in labels)


def _selected(resolution: resolver.Resolution, item_id: str) -> bool:
    return any(f.candidate.memory_id == item_id for f in resolution.facts) or any(
        p.candidate.memory_id == item_id for p in resolution.plans
    )


def _winner(resolution: resolver.Resolution) -> tuple[str, int] | None:
    for fact in resolution.facts:
        return fact.candidate.memory_id, fact.candidate.version
    return None


def _summary(resolution: resolver.Resolution) -> str:
    parts = [
        f"{f.candidate.memory_id} v{f.candidate.version} ({f.reason})" for f in resolution.facts
    ]
    parts += [f"abstains: {a.reason}" for a in resolution.abstentions]
    parts += [f"plan {p.candidate.memory_id}" for p in resolution.plans]
    return "; ".join(parts) or "nothing"


def evaluate(version: MemoryVersion, spec: Spec, policy: resolver.Policy, now: datetime) -> Outcome:
    after = _ask(version, spec, policy, now, with_version=True)
    if spec.expect == "no_new_conflict":
        return _regression(version, spec, policy, now, after)
    selected = _selected(after, version.item_id)
    wanted = spec.expect == "applies"
    passed = selected == wanted
    verdict = "selected" if selected else "not selected"
    detail = f"{verdict} (expected {'applies' if wanted else 'does not apply'}): {_summary(after)}"
    if passed and spec.revoke_basis:
        before = _ask(version, spec, policy, now, with_version=False)
        if _winner(before) != _winner(after):
            return Outcome(
                spec,
                False,
                f"fallback differs from before: {_summary(after)} vs {_summary(before)}",
            )
        detail += f"; falls back to: {_summary(before)}"
    return Outcome(spec, passed, detail)


def _regression(
    version: MemoryVersion,
    spec: Spec,
    policy: resolver.Policy,
    now: datetime,
    after: resolver.Resolution,
) -> Outcome:
    before = _ask(version, spec, policy, now, with_version=False)
    new_conflict = any(a.reason == "conflict" for a in after.abstentions) and not any(
        a.reason == "conflict" for a in before.abstentions
    )
    impact = []
    if _winner(before) != _winner(after):
        impact.append(
            {"context": spec.context, "before": _summary(before), "after": _summary(after)}
        )
    if new_conflict:
        return Outcome(
            spec, False, f"activation would create a conflict: {_summary(after)}", impact
        )
    return Outcome(spec, True, f"still resolves: {_summary(after)}", impact)


def run_all(version: MemoryVersion, policy: resolver.Policy, now: datetime) -> list[Outcome]:
    specs = [*generated_specs(version, now), *custom_specs(version, now)]
    return [evaluate(version, spec, policy, now) for spec in specs]
