"""Scenario checks (docs/design.md, Scenario checks), run through the resolver agents use.

Every scenario asks the real candidate query and the pure resolver a question with the
version under check treated as active, and compares the answer with what must happen.
Each generated scenario can fail; one that could not would prove nothing, so it is not
generated:

- *another subject* / *another tenant*: the version's own row is injected into the
  candidate query (``include``) for a real other subject of the tenant (a made-up id when
  there is none) and for a tenant id no tenant has; only the query's tenant and subject
  filters keep it out, so a loader that let rows cross subjects or tenants fails them.
- *revoked*: the version's basis is revoked; the version must drop out and the field must
  fall back to what resolved before this version (its still-active predecessor counts),
  less what the same revocation withdraws anyway: every other item naming a revoked
  source among its evidence (source_revoke retires them too). The fallback is thus the
  same whichever of two items on one record activated first. It fails when the
  revocation would leave the version in use, or, the query filtering on the sources
  each version is linked to, would keep or withdraw another item against its evidence.
- *visibility* (only for an item with restrictive labels): a principal holding none of
  the labels of one restrictive source or of the item's own visibility, as those labels
  are *now*, must not get it. It fails when the labels the resolver filters on are not
  the sources' current ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db.models import QuerySet

from approvals import check_lookups
from audit.chain import digest
from core.kinds import MemoryKind
from core.times import iso
from memory import resolver, rules
from memory.candidates import CandidatePool, CandidateRequest, load_candidates
from memory.models import MemoryVersion, Scenario, Status
from memory.rules import TENANT_WIDE

ONE_DAY = timedelta(days=1)
OTHER_TENANT_ID = -1  # no tenant has it: "another tenant" must find nothing of ours
T = TypeVar("T")


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
    labels: tuple[str, ...] | None = None  # the asking principal's; None: every label
    # The own-scope and regression scenarios also say what activation changes there
    # (not part of the identity: the stored keys stay the same).
    reports_impact: bool = False

    def as_dict(self) -> dict[str, Any]:
        extra = {} if self.labels is None else {"labels": list(self.labels)}
        return {
            **extra,
            "name": self.name,
            "kind": self.kind,
            "context": self.context,
            "valid_at": iso(self.valid_at),
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
class ScenarioOutcome:
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


def generated_specs(version: MemoryVersion, now: datetime) -> Iterator[Spec]:
    context = _context_for(version.scope)
    inside = inside_validity(version, now)
    yield Spec(
        "applicable: its own scope",
        "applicable",
        context,
        inside,
        "applies",
        reports_impact=True,
    )
    for dim, value in sorted(context.items()):
        moved = {**context, dim: check_lookups.sibling_value(version, dim, value)}
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
        subject_id=check_lookups.other_subject(version),
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
    hidden_from = _lacking_labels(version)
    if hidden_from is not None:
        yield Spec(
            "visibility: a principal lacking its labels",
            "visibility",
            context,
            inside,
            "does_not_apply",
            labels=hidden_from,
        )
    yield from _regression_specs(version, now)


def _lacking_labels(version: MemoryVersion) -> tuple[str, ...] | None:
    """Labels of a principal who may see everything about the item except one restrictive
    label set; None when nothing about the item is restricted."""
    sets = check_lookups.current_label_sets(version)
    restrictive = [labels for labels in sets if "*" not in labels]
    if not restrictive:
        return None
    # Every label anyone may need, including those the resolver filters on (the stored
    # copy): a copy gone stale would then let this principal through, and fail the check.
    stored = [frozenset(labels) for labels in version.required_visibility]
    every = {label for labels in [*sets, *stored] for label in labels if label != "*"}
    return tuple(sorted(every - restrictive[0]))


def _regression_specs(version: MemoryVersion, now: datetime) -> Iterator[Spec]:
    others = check_lookups.prefetched(
        ("regression", version.pk),
        lambda: (
            MemoryVersion.objects.filter(
                tenant_id=version.tenant_id,
                subject_id=version.subject_id,
                field=version.field,
                status=Status.ACTIVE,
            )
            .exclude(item_id=version.item_id)
            .order_by("item_id")
        ),
    )
    for other in others:
        yield Spec(
            f"regression: {other.item_id} v{other.number} still resolves",
            "regression",
            _context_for(other.scope),
            inside_validity(other, now),
            "no_new_conflict",
            regression_of=other.item_id,
            reports_impact=True,
        )


def in_force(version: MemoryVersion) -> QuerySet[Scenario]:
    """The custom scenarios a version is checked with: those written for it or an earlier
    version of its lineage (a correction starts from them), less those removed."""
    return Scenario.objects.filter(
        version__item_id=version.item_id,
        version__number__lte=version.number,
        removal__isnull=True,
    )


def custom_specs(version: MemoryVersion, now: datetime) -> Iterator[Spec]:
    scenarios = check_lookups.prefetched(
        ("custom", version.pk),
        lambda: in_force(version).order_by("pk"),
    )
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


def _answer(
    version: MemoryVersion,
    spec: Spec,
    policy: resolver.Policy,
    now: datetime,
    *,
    with_version: bool,
    pool: CandidatePool | None = None,
) -> tuple[resolver.Resolution, list[resolver.Candidate]]:
    """``with_version``: as if the version were active (and its lineage's older versions
    over, except under a revoked basis, where the predecessor is the fallback); without
    it: what resolves now, before this version, with nothing revoked. The candidates come
    back too, so the impact can show what each answer says (explain lists who lost)."""
    revoked = spec.revoke_basis and with_version
    request = CandidateRequest(
        tenant_id=spec.tenant_id if spec.tenant_id is not None else version.tenant_id,
        subject_id=spec.subject_id or str(version.subject_id),
        fields=(version.field,),
        context=spec.context,
        known_at=now,
        include=version.pk if with_version else None,
        exclude_item=version.item_id if with_version and not revoked else None,
        # "before" never holds the version itself, even when it is already active
        # (revalidation): it is what resolves without it.
        exclude_version=None if with_version else version.pk,
        revoked_sources=version.source_ids if revoked else (),
        revocation_spares_item=version.item_id if revoked else None,
    )
    candidates = pool.candidates(request) if pool is not None else load_candidates(request)
    if with_version:
        verification = verification_when_active(version)
        candidates = [
            replace(c, verification=verification) if c.memory_id == version.item_id else c
            for c in candidates
        ]
    return resolver.resolve(candidates, _query(version, spec, now, candidates), policy), candidates


def _query(
    version: MemoryVersion, spec: Spec, now: datetime, candidates: Sequence[resolver.Candidate]
) -> resolver.Query:
    """As the spec's principal asks (the visibility check), else as a reader who holds
    every label any candidate needs: checks look at what the resolver does, not at who
    may see it, so a regression is judged, and its impact told, with the memories a
    label-less agent would not be shown (issue 43, point 5)."""
    labels = (
        frozenset(spec.labels)
        if spec.labels is not None
        else frozenset({"*"}).union(*(labels for c in candidates for labels in c.visibility))
    )
    return resolver.Query(
        context=spec.context,
        valid_at=spec.valid_at,
        known_at=now,
        labels=labels,
        fields=(version.field,),
        explain=True,
    )


def _fallback(
    version: MemoryVersion,
    spec: Spec,
    policy: resolver.Policy,
    now: datetime,
    pool: CandidatePool | None = None,
) -> resolver.Resolution:
    """What the field falls back to when the version's basis is revoked: what resolves
    without the version, less every other item that names a revoked source as its
    evidence (the revocation retires them as well). Its own lineage is spared, as by the
    revoked question itself: the still-active predecessor is what resolved before.

    Taken from what resolves without the version, not from the current answer: a
    revoked memo also withdraws the other rules citing it, so comparing with them would
    fail whichever of two rules on one memo activated second (issue 33). Filtered here
    on the evidence each candidate names, independently of the query's filter on the
    sources it is linked to, so a revocation reaching the wrong versions still fails."""
    revoked = frozenset(version.source_ids)
    _, candidates = _answer(version, spec, policy, now, with_version=False, pool=pool)
    spared = [
        c for c in candidates if c.memory_id == version.item_id or revoked.isdisjoint(c.source_ids)
    ]
    return resolver.resolve(spared, _query(version, spec, now, candidates), policy)


def _ask(
    version: MemoryVersion,
    spec: Spec,
    policy: resolver.Policy,
    now: datetime,
    *,
    with_version: bool,
    pool: CandidatePool | None = None,
) -> resolver.Resolution:
    return _answer(version, spec, policy, now, with_version=with_version, pool=pool)[0]


def verification_when_active(version: MemoryVersion) -> str:
    """A preview runs before the approval that raises ``asserted``: it must rank the item
    as activation will, or the reviewer is shown a failure and no impact where the gate
    will find a new winner (docs/design.md: the reviewer sees the impact before approving)."""
    if version.kind == MemoryKind.PREFERENCE or version.status not in (
        Status.PENDING_REVIEW,
        Status.HELD_UNRESOLVED,
    ):
        return version.verification
    return rules.verification_on_approval(version)


def _selected(resolution: resolver.Resolution, version: MemoryVersion) -> bool:
    """This version, not its lineage: under a revoked basis the predecessor may answer."""
    mine = (version.item_id, version.number)
    return any(
        (f.candidate.memory_id, f.candidate.version) == mine for f in resolution.facts
    ) or any((p.candidate.memory_id, p.candidate.version) == mine for p in resolution.plans)


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


def evaluate(
    version: MemoryVersion,
    spec: Spec,
    policy: resolver.Policy,
    now: datetime,
    pool: CandidatePool | None = None,
) -> ScenarioOutcome:
    if spec.expect == "no_new_conflict":
        return _regression(version, spec, policy, now, pool)
    if spec.reports_impact:
        change, _, after = compare(version, spec, policy, now, pool)
        changes = [change.as_dict()] if change.changed else []
    else:
        after, changes = _ask(version, spec, policy, now, with_version=True, pool=pool), []
    selected = _selected(after, version)
    wanted = spec.expect == "applies"
    passed = selected == wanted
    verdict = "selected" if selected else "not selected"
    detail = f"{verdict} (expected {'applies' if wanted else 'does not apply'}): {_summary(after)}"
    if passed and spec.revoke_basis:
        fallback = _fallback(version, spec, policy, now, pool)
        if _winner(fallback) != _winner(after):
            return ScenarioOutcome(
                spec,
                False,
                "revoking its basis would not fall back to what resolves without it and "
                "the other items citing its sources (a version linked to other sources "
                f"than it names?): {_summary(after)} vs {_summary(fallback)}",
            )
        detail += f"; falls back to: {_summary(fallback)}"
    return ScenarioOutcome(spec, passed, detail, changes)


@dataclass(frozen=True)
class ContextImpact:
    """What agents asking in one context are told about the field without the version
    and with it: the winning candidate (None: an abstention, said in ``*_reason``), and
    the candidates that answered before and are outranked after."""

    context: dict[str, str]
    own_scope: bool
    regression_of: str | None
    before: resolver.Candidate | None
    before_reason: str
    after: resolver.Candidate | None
    after_reason: str
    outranked: tuple[resolver.Candidate, ...]

    @property
    def changed(self) -> bool:
        return _identity(self.before) != _identity(self.after) or bool(self.outranked)

    def as_dict(self) -> dict[str, Any]:
        """Ids and reasons only (stored with the check, listed by the API to anyone who
        may read the item): values and statements are shown by the dashboard, to whom
        may see them."""
        return {
            "context": self.context,
            "before": _told(self.before, self.before_reason),
            "after": _told(self.after, self.after_reason),
            "outranked": [f"{c.memory_id} v{c.version}" for c in self.outranked],
        }


def _identity(candidate: resolver.Candidate | None) -> tuple[str, int] | None:
    return None if candidate is None else (candidate.memory_id, candidate.version)


def _told(candidate: resolver.Candidate | None, reason: str) -> str:
    if candidate is None:
        return f"abstains: {reason}"
    return f"{candidate.memory_id} v{candidate.version} ({reason})"


def _answer_of(
    resolution: resolver.Resolution,
) -> tuple[resolver.Candidate | None, str]:
    for fact in resolution.facts:
        return fact.candidate, fact.reason
    for abstention in resolution.abstentions:
        return None, abstention.reason
    return None, "no_applicable_fact"


def compare(
    version: MemoryVersion,
    spec: Spec,
    policy: resolver.Policy,
    now: datetime,
    pool: CandidatePool | None = None,
) -> tuple[ContextImpact, resolver.Resolution, resolver.Resolution]:
    """Ask the spec's question without the version and with it (as if active)."""
    before, _ = _answer(version, spec, policy, now, with_version=False, pool=pool)
    after, candidates = _answer(version, spec, policy, now, with_version=True, pool=pool)
    selected_before = {
        (c.memory_id, c.version) for c in before.considered if c.outcome == "selected"
    }
    lost = {
        (c.memory_id, c.version)
        for c in after.considered
        if c.outcome == "outranked" and (c.memory_id, c.version) in selected_before
    }
    outranked = tuple(c for c in candidates if (c.memory_id, c.version) in lost)
    before_fact, before_reason = _answer_of(before)
    after_fact, after_reason = _answer_of(after)
    impact = ContextImpact(
        context=dict(spec.context),
        own_scope=spec.kind == "applicable",
        regression_of=spec.regression_of,
        before=before_fact,
        before_reason=before_reason,
        after=after_fact,
        after_reason=after_reason,
        outranked=tuple(sorted(outranked, key=lambda c: (c.memory_id, c.version))),
    )
    return impact, before, after


def impact(version: MemoryVersion, policy: resolver.Policy, now: datetime) -> list[ContextImpact]:
    """Per context the version touches (its own scope, then the scope of every other
    active item of its subject and field): what agents are told now and after activation,
    as an agent holding every label the version needs is told it (the stored checks)."""
    return impact_seen_by(version, policy, now, [None])[0]


def impact_seen_by(
    version: MemoryVersion,
    policy: resolver.Policy,
    now: datetime,
    label_sets: Sequence[frozenset[str] | None],
) -> list[list[ContextImpact]]:
    """``impact`` once per set of labels an agent asks with (None: every label the
    version needs). Resolve filters what an agent is told by its key's labels, so agents
    holding different labels can be told different things in the same context (issue 43:
    the P-9 exception is told only to agents with ``staff``). The contexts and the
    candidate pool are read once for all the sets."""
    seen: set[str] = set()
    specs = []
    for spec in generated_specs(version, now):
        if not spec.reports_impact:
            continue
        key = digest(spec.context)
        if key in seen:
            continue
        seen.add(key)
        specs.append(spec)
    pool = check_lookups.pool_for(version)
    return [
        [
            compare(
                version,
                spec if labels is None else replace(spec, labels=tuple(sorted(labels))),
                policy,
                now,
                pool,
            )[0]
            for spec in specs
        ]
        for labels in label_sets
    ]


def _regression(
    version: MemoryVersion,
    spec: Spec,
    policy: resolver.Policy,
    now: datetime,
    pool: CandidatePool | None = None,
) -> ScenarioOutcome:
    change, before, after = compare(version, spec, policy, now, pool)
    new_conflict = any(a.reason == "conflict" for a in after.abstentions) and not any(
        a.reason == "conflict" for a in before.abstentions
    )
    impact = [change.as_dict()] if change.changed else []
    if new_conflict:
        return ScenarioOutcome(
            spec, False, f"activation would create a conflict: {_summary(after)}", impact
        )
    return ScenarioOutcome(spec, True, f"still resolves: {_summary(after)}", impact)


def run_all(
    version: MemoryVersion, policy: resolver.Policy, now: datetime
) -> list[ScenarioOutcome]:
    specs = [*generated_specs(version, now), *custom_specs(version, now)]
    pool = check_lookups.pool_for(version)
    return [evaluate(version, spec, policy, now, pool) for spec in specs]
