"""Decide which remembered fact applies to a context at a time, and say why.

The resolver is pure on purpose: candidates in, decision out, no database and no clock
(both times are arguments). The API, the scenario checks and the benchmark all call this
one function, so what is checked before activation is exactly what agents are served.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from core.kinds import MemoryKind

__all__ = [
    "CRITERIA",
    "KIND_RANK",
    "REVIEWED_KINDS",
    "VERIFICATION_RANK",
    "Abstention",
    "Candidate",
    "CandidateOutcome",
    "Considered",
    "Fact",
    "Plan",
    "Policy",
    "PolicyError",
    "Query",
    "Resolution",
    "check_publishable",
    "in_use_at",
    "is_expired",
    "is_pending_plan",
    "is_valid_at",
    "is_visible",
    "resolve",
    "scope_applies",
    "specificity",
]

KIND_RANK: tuple[str, ...] = (
    MemoryKind.TASK_FACT.value,
    MemoryKind.ENTERPRISE_RULE.value,
    MemoryKind.PREFERENCE.value,
)
VERIFICATION_RANK: tuple[str, ...] = ("verified_record", "confirmed", "asserted")
CRITERIA: tuple[str, ...] = ("specificity", "kind", "verification", "valid_from")
# Kinds a reviewer approved. Their tier comes before every policy criterion and no policy
# can move it: an agent could otherwise file a business exception as a "preference" with a
# narrow scope and, being more specific, outrank the approved rule without any review.
REVIEWED_KINDS: frozenset[str] = frozenset(KIND_RANK) - {MemoryKind.PREFERENCE.value}
UNREVIEWED_KIND = MemoryKind.PREFERENCE.value
PRECEDENCE_KEYS: tuple[str, ...] = ("order", "kind_rank", "verification_rank")

WILDCARD = "*"
TENANT_DIMENSION = "tenant"
PLAN = "plan"
VALID_FROM_UNKNOWN = "valid_from_unknown"
PENDING_CORRECTION = "pending_correction"
# The reason of a fact nothing else applicable competed with (``_reason`` with no runner-up
# and no agreeing candidate).
ONLY_APPLICABLE = "only applicable fact"

CandidateOutcome = Literal["selected", "outranked", "out_of_scope", "not_valid_at_time", "expired"]
AbstentionReason = Literal["conflict", "not_valid_at_time", "no_applicable_fact"]
_Key = tuple[Any, ...]


class PolicyError(ValueError):
    """A precedence document that cannot be used; `key` names the entry so the API can say."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"precedence.{key}: {message}")
        self.key = key


@dataclass(frozen=True, slots=True)
class Policy:
    """A tenant's versioned precedence; cache keys and check runs carry its version."""

    version: str
    kind_rank: tuple[str, ...] = KIND_RANK
    verification_rank: tuple[str, ...] = VERIFICATION_RANK
    order: tuple[str, ...] = CRITERIA

    def __post_init__(self) -> None:
        # Validate here, not only in from_precedence, so no code path builds a policy that
        # silently ranks an unknown kind last or skips a criterion by a typo.
        if not self.version:
            raise PolicyError("version", "must be a non-empty string")
        _check_names("order", self.order, CRITERIA, complete=False)
        _check_names("kind_rank", self.kind_rank, KIND_RANK, complete=True)
        _check_names("verification_rank", self.verification_rank, VERIFICATION_RANK, complete=True)

    @classmethod
    def from_precedence(cls, version: str, precedence: Mapping[str, Any]) -> Policy:
        """Build from the stored/posted JSON; every key is optional and defaults as above."""
        unknown = [key for key in precedence if key not in PRECEDENCE_KEYS]
        if unknown:
            raise PolicyError(
                str(unknown[0]), f"unknown key; allowed: {', '.join(PRECEDENCE_KEYS)}"
            )
        return cls(
            version=version,
            kind_rank=_names_from(precedence, "kind_rank", KIND_RANK),
            verification_rank=_names_from(precedence, "verification_rank", VERIFICATION_RANK),
            order=_names_from(precedence, "order", CRITERIA),
        )

    def to_precedence(self) -> dict[str, Any]:
        """The JSON form stored with the policy version and shown by GET /policy."""
        return {
            "order": list(self.order),
            "kind_rank": list(self.kind_rank),
            "verification_rank": list(self.verification_rank),
        }


def check_publishable(policy: Policy) -> None:
    """A published policy must not even *say* that an unreviewed item ranks above a
    reviewed one: the resolver's review tier would ignore it, and a policy that reads
    one way and acts another misleads the people who manage it."""
    if policy.kind_rank[-1] != UNREVIEWED_KIND:
        raise PolicyError(
            "kind_rank",
            f"{UNREVIEWED_KIND!r} must be ranked last: an unreviewed item never outranks "
            "a reviewed one (task_fact, enterprise_rule)",
        )


def _names_from(
    precedence: Mapping[str, Any], key: str, default: tuple[str, ...]
) -> tuple[str, ...]:
    """Read one list of names; a bare string is refused because it would iterate by letter."""
    if key not in precedence:
        return default
    raw = precedence[key]
    if isinstance(raw, str) or not isinstance(raw, list | tuple):
        raise PolicyError(key, "must be a list of strings")
    if not all(isinstance(name, str) for name in raw):
        raise PolicyError(key, "must be a list of strings")
    return tuple(raw)


def _check_names(
    key: str, names: tuple[str, ...], allowed: tuple[str, ...], *, complete: bool
) -> None:
    """Refuse unknown, repeated or (for rankings) missing names with a message naming them."""
    unknown = [name for name in names if name not in allowed]
    if unknown:
        raise PolicyError(key, f"unknown {_quoted(unknown)}; allowed: {', '.join(allowed)}")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise PolicyError(key, f"duplicate {_quoted(repeated)}")
    missing = [name for name in allowed if name not in names] if complete else []
    if missing:
        raise PolicyError(key, f"missing {_quoted(missing)}; every one must be ranked")
    if not names:
        raise PolicyError(key, "must name at least one criterion")


def _quoted(names: Iterable[object]) -> str:
    return ", ".join(repr(name) for name in names)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One memory version as the resolver needs it (the caller maps rows to this)."""

    memory_id: str
    version: int
    kind: str
    field: str
    value: Any
    statement: str
    scope: Mapping[str, str]
    verification: str
    assertion: str
    valid_from: datetime | None
    valid_to: datetime | None
    expires_at: datetime | None
    activated_at: datetime | None
    deactivated_at: datetime | None
    source_ids: tuple[str, ...] = ()
    basis: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    visibility: tuple[frozenset[str], ...] = ()
    pending_correction: bool = False


@dataclass(frozen=True, slots=True)
class Query:
    """What the agent asks: a context, the world time and the system time it asks about."""

    context: Mapping[str, str]
    valid_at: datetime
    known_at: datetime
    labels: frozenset[str]
    fields: tuple[str, ...] | None = None
    explain: bool = False


@dataclass(frozen=True, slots=True)
class Fact:
    field: str
    candidate: Candidate
    reason: str
    qualifiers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Abstention:
    field: str
    reason: AbstentionReason
    detail: str
    memory_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Plan:
    field: str
    candidate: Candidate


@dataclass(frozen=True, slots=True)
class Considered:
    memory_id: str
    version: int
    field: str
    outcome: CandidateOutcome


@dataclass(frozen=True, slots=True)
class Resolution:
    """Everything sorted by field, memory id, version: the answer never depends on input order."""

    facts: tuple[Fact, ...]
    abstentions: tuple[Abstention, ...]
    plans: tuple[Plan, ...]
    considered: tuple[Considered, ...]


# --- single-item predicates ---------------------------------------------------------------


def _is_tenant_wide(dimension: str, value: str) -> bool:
    # Only the tenant dimension has a wildcard: a literal "*" elsewhere must never widen an
    # item to every project or task (a missing scope must not become company-wide).
    return dimension == TENANT_DIMENSION and value == WILDCARD


def scope_applies(scope: Mapping[str, str], context: Mapping[str, str]) -> bool:
    """Every scoped dimension must equal the context's; a dimension the context lacks fails."""
    # Plain loops here and in is_visible: they run for every candidate of every request,
    # and a generator inside all() costs about a third more.
    for dim, value in scope.items():
        if context.get(dim) != value and not _is_tenant_wide(dim, value):
            return False
    return True


def specificity(scope: Mapping[str, str]) -> int:
    """Number of dimensions that narrow the item; tenant-wide counts 0 (the broadest)."""
    return len(scope) - (1 if scope.get(TENANT_DIMENSION) == WILDCARD else 0)


def is_visible(
    visibility: Sequence[frozenset[str]] | tuple[frozenset[str], ...], labels: frozenset[str]
) -> bool:
    """The caller must satisfy every source's label set: one hidden source hides the item."""
    for required in visibility:
        if WILDCARD not in required and required.isdisjoint(labels):
            return False
    return True


def in_use_at(c: Candidate, known_at: datetime) -> bool:
    """Was this version the one Memgov used at that system time (what it would have said)?"""
    if c.activated_at is None or c.activated_at > known_at:
        return False
    return c.deactivated_at is None or known_at < c.deactivated_at


def is_expired(c: Candidate, known_at: datetime) -> bool:
    """Expiry is a governance limit, so it is judged at system time, not valid time."""
    return c.expires_at is not None and c.expires_at <= known_at


def is_valid_at(c: Candidate, valid_at: datetime) -> bool:
    """Half-open [valid_from, valid_to); an unknown start matches (and is reported)."""
    started = c.valid_from is None or c.valid_from <= valid_at
    return started and (c.valid_to is None or valid_at < c.valid_to)


def is_pending_plan(c: Candidate, valid_at: datetime) -> bool:
    """A plan is about what has not happened yet: one that starts after ``valid_at`` is
    still a plan worth listing ("joining Nova next month"); one whose end passed is not."""
    return c.assertion == PLAN and (c.valid_to is None or valid_at < c.valid_to)


def _screen(c: Candidate, query: Query) -> CandidateOutcome | None:
    """The first gate an item fails, in the order the design lists them; None = passes."""
    if not scope_applies(c.scope, query.context):
        return "out_of_scope"
    if is_expired(c, query.known_at):
        return "expired"
    if is_pending_plan(c, query.valid_at):
        return None
    if not is_valid_at(c, query.valid_at):
        return "not_valid_at_time"
    return None


# --- precedence -----------------------------------------------------------------------------


def _scores(rank: tuple[str, ...]) -> dict[str, int]:
    # Bigger is stronger; names the policy does not rank score 0, below every ranked one.
    return {name: len(rank) - i for i, name in enumerate(rank)}


@functools.lru_cache(maxsize=64)
def _ranker(policy: Policy) -> Callable[[Candidate], _Key]:
    """Build the precedence key once per policy: a bigger key is a stronger claim. Its
    first part is the review tier (reviewed before unreviewed), which no policy changes."""
    kinds, checks = _scores(policy.kind_rank), _scores(policy.verification_rank)
    by_name: dict[str, Callable[[Candidate], Any]] = {
        "specificity": lambda c: specificity(c.scope),
        "kind": lambda c: kinds.get(c.kind, 0),
        "verification": lambda c: checks.get(c.verification, 0),
        # (0,) sorts before (1, t): an unknown start is the earliest, and the two datetimes
        # are only compared when both are known.
        "valid_from": lambda c: (0,) if c.valid_from is None else (1, c.valid_from),
    }
    parts = tuple(by_name[name] for name in policy.order)
    return lambda c: (c.kind in REVIEWED_KINDS, *[part(c) for part in parts])


def _identity(c: Candidate) -> tuple[str, int]:
    return (c.memory_id, c.version)


def _same_value(a: Any, b: Any) -> bool:
    """JSON equality: Python's == alone would let true agree with 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(map(_same_value, a, b))
    return bool(a == b)


# --- reasons (human sentences naming the criterion that decided) ---------------------------


def _scope_words(scope: Mapping[str, str]) -> str:
    return "+".join(sorted(d for d, v in scope.items() if not _is_tenant_wide(d, v)))


def _scope_label(scope: Mapping[str, str]) -> str:
    if specificity(scope):
        return f"{_scope_words(scope)} scope"
    return "tenant-wide" if scope else "unscoped"


def _when(moment: datetime | None) -> str:
    return "unknown start" if moment is None else moment.isoformat()


def _by_specificity(w: Candidate, r: Candidate) -> str:
    return (
        f"{_scope_words(w.scope)} scope is more specific than the {r.kind} "
        f"({r.memory_id}, {_scope_label(r.scope)})"
    )


def _by_kind(w: Candidate, r: Candidate) -> str:
    return f"{w.kind} outranks {r.kind} ({r.memory_id})"


def _by_verification(w: Candidate, r: Candidate) -> str:
    return f"{w.verification} outranks {r.verification} ({r.memory_id})"


def _by_valid_from(w: Candidate, r: Candidate) -> str:
    return (
        f"later valid_from than {r.memory_id} ({_when(w.valid_from)} after {_when(r.valid_from)})"
    )


def _by_review(w: Candidate, r: Candidate) -> str:
    return (
        f"{w.kind} was reviewed and outranks the unreviewed {r.kind} ({r.memory_id}, "
        f"{_scope_label(r.scope)}) whatever its scope"
    )


_REASONS: dict[str, Callable[[Candidate, Candidate], str]] = {
    "review": _by_review,
    "specificity": _by_specificity,
    "kind": _by_kind,
    "verification": _by_verification,
    "valid_from": _by_valid_from,
}


def _reason(
    winner: Candidate,
    key: _Key,
    runner_up: tuple[_Key, Candidate] | None,
    agreeing: Sequence[Candidate],
    order: tuple[str, ...],
) -> str:
    """Name the criterion that decided. When the review tier decided but the policy's own
    order agrees, the policy's criterion is named (it says more); the review tier is
    named when it overruled the policy (a narrower preference lost to a reviewed fact)."""
    parts = []
    if runner_up is not None:
        runner_key, runner = runner_up
        pairs = zip(("review", *order), key, runner_key, strict=True)
        decided = [name for name, mine, theirs in pairs if mine != theirs]
        criterion = decided[0]
        if criterion == "review" and len(decided) > 1 and key[1:] > runner_key[1:]:
            criterion = decided[1]
        parts.append(_REASONS[criterion](winner, runner))
    if agreeing:
        parts.append(f"same value as equally ranked {', '.join(c.memory_id for c in agreeing)}")
    return "; ".join(parts) or ONLY_APPLICABLE


def _qualifiers(c: Candidate) -> tuple[str, ...]:
    if c.valid_from is not None and not c.pending_correction:  # most facts: neither
        return ()
    flags = ((VALID_FROM_UNKNOWN, c.valid_from is None), (PENDING_CORRECTION, c.pending_correction))
    return tuple(name for name, on in flags if on)


# --- per-field decision ---------------------------------------------------------------------


@dataclass(slots=True)
class _Group:
    """One field's screened candidates; lives only inside one resolve call."""

    states: list[Candidate] = dataclasses.field(default_factory=list)
    plans: list[Candidate] = dataclasses.field(default_factory=list)
    rejected: list[tuple[Candidate, CandidateOutcome]] = dataclasses.field(default_factory=list)

    def add(self, c: Candidate, outcome: CandidateOutcome | None) -> None:
        if outcome is not None:
            self.rejected.append((c, outcome))
        elif c.assertion == PLAN:
            self.plans.append(c)
        else:
            self.states.append(c)

    def rejected_ids(
        self, outcome: CandidateOutcome, *, states_only: bool = False
    ) -> tuple[str, ...]:
        chosen = (c for c, o in self.rejected if o == outcome)
        return tuple(
            sorted({c.memory_id for c in chosen if not states_only or c.assertion != PLAN})
        )


def _runner_up(rest: list[tuple[_Key, Candidate]]) -> tuple[_Key, Candidate] | None:
    """Best of the losers (smallest id among equals) so the reason is deterministic."""
    if not rest:
        return None
    best = max(key for key, _ in rest)
    return best, min((c for key, c in rest if key == best), key=_identity)


def _conflict(name: str, tied: list[Candidate]) -> Abstention:
    ids = tuple(sorted({c.memory_id for c in tied}))
    detail = (
        f"{len(tied)} equally ranked memories give different values for {name} "
        f"({', '.join(ids)}); the policy cannot choose, so none is used"
    )
    return Abstention(name, "conflict", detail, ids)


def _no_fact(name: str, group: _Group, query: Query) -> Abstention:
    """Say honestly why nothing applies: wrong time, only plans, expired, or nothing here."""
    late = group.rejected_ids("not_valid_at_time", states_only=True)
    if late:
        when = query.valid_at.isoformat()
        detail = f"memory for {name} applies to this context but is not valid at {when}"
        return Abstention(name, "not_valid_at_time", detail, late)
    if group.plans:
        ids = tuple(sorted({c.memory_id for c in group.plans}))
        detail = f"only plans exist for {name}; a plan is never the current state"
        return Abstention(name, "no_applicable_fact", detail, ids)
    expired = group.rejected_ids("expired")
    if expired:
        return Abstention(name, "no_applicable_fact", f"the memory for {name} has expired", expired)
    return Abstention(name, "no_applicable_fact", f"no memory for {name} applies to this context")


def _decide(
    name: str, group: _Group, query: Query, policy: Policy, rank: Callable[[Candidate], _Key]
) -> Fact | Abstention:
    """The best rank group wins if it agrees on the value; a disagreement is never guessed."""
    if not group.states:
        return _no_fact(name, group, query)
    if len(group.states) == 1:  # most fields: nothing to rank it against
        only = group.states[0]
        return Fact(name, only, ONLY_APPLICABLE, _qualifiers(only))
    keyed = [(rank(c), c) for c in group.states]
    best = max(key for key, _ in keyed)
    top = sorted((c for key, c in keyed if key == best), key=_identity)
    if any(not _same_value(top[0].value, c.value) for c in top[1:]):
        return _conflict(name, top)
    runner_up = _runner_up([(key, c) for key, c in keyed if key != best])
    reason = _reason(top[0], best, runner_up, top[1:], policy.order)
    return Fact(name, top[0], reason, _qualifiers(top[0]))


def _considered(name: str, group: _Group, winner: Candidate | None) -> list[Considered]:
    rows = [Considered(c.memory_id, c.version, name, o) for c, o in group.rejected]
    rows += [Considered(c.memory_id, c.version, name, "selected") for c in group.plans]
    rows += [
        Considered(c.memory_id, c.version, name, "selected" if c is winner else "outranked")
        for c in group.states
    ]
    return sorted(rows, key=lambda row: (row.memory_id, row.version, row.outcome))


# --- entry point ----------------------------------------------------------------------------


def _collect(candidates: Iterable[Candidate], query: Query) -> dict[str, _Group]:
    """One pass: drop what the caller may not see or Memgov did not use then, screen the rest."""
    wanted = None if query.fields is None else frozenset(query.fields)
    groups: dict[str, _Group] = {}
    for c in candidates:
        if wanted is not None and c.field not in wanted:
            continue
        if in_use_at(c, query.known_at) and is_visible(c.visibility, query.labels):
            group = groups.get(c.field) or groups.setdefault(c.field, _Group())
            group.add(c, _screen(c, query))
    return groups


def resolve(candidates: Iterable[Candidate], query: Query, policy: Policy) -> Resolution:
    """Answer every requested field with a fact or an abstention, plus the applicable plans."""
    groups = _collect(candidates, query)
    names = sorted(groups if query.fields is None else set(query.fields))
    facts: list[Fact] = []
    abstentions: list[Abstention] = []
    plans: list[Plan] = []
    considered: list[Considered] = []
    rank = _ranker(policy)
    for name in names:
        group = groups.get(name) or _Group()
        decision = _decide(name, group, query, policy, rank)
        if isinstance(decision, Fact):
            facts.append(decision)
        else:
            abstentions.append(decision)
        if group.plans:
            plans += [Plan(name, c) for c in sorted(group.plans, key=_identity)]
        if query.explain:
            winner = decision.candidate if isinstance(decision, Fact) else None
            considered += _considered(name, group, winner)
    return Resolution(tuple(facts), tuple(abstentions), tuple(plans), tuple(considered))
