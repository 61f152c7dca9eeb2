"""Properties of the resolver, checked against a small independent oracle written below.

The oracle re-states the design's rules plainly instead of importing the resolver's helpers,
so a bug in a helper cannot hide itself.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.resolver import Candidate, Policy, Query, Resolution, resolve

SETTINGS = settings(deadline=None, max_examples=200)

KINDS = ("task_fact", "enterprise_rule", "preference")
VERIFICATIONS = ("verified_record", "confirmed", "asserted")
CRITERIA = ("specificity", "kind", "verification", "valid_from")
FIELDS = ("f1", "f2")
DIMENSIONS = ("task", "project")
MOMENTS = tuple(datetime(2026, month, 1, tzinfo=UTC) for month in range(1, 8))

# Skewed towards "in use, unexpired, valid, visible" so most examples reach the ranking
# (ties, runner-ups, conflicts), while every gate still fails often enough to matter.
moments = st.sampled_from(MOMENTS)
late_moments = st.sampled_from(MOMENTS[3:])


def skewed(*favourites: datetime | None) -> st.SearchStrategy[datetime | None]:
    return st.sampled_from((*(favourites * 15), None, *MOMENTS))


scopes = st.sampled_from(({}, {"tenant": "*"})) | st.dictionaries(
    st.sampled_from(DIMENSIONS), st.sampled_from(("1", "2")), max_size=2
)
contexts = st.fixed_dictionaries({d: st.just("1") for d in DIMENSIONS}) | st.dictionaries(
    st.sampled_from(DIMENSIONS), st.sampled_from(("1", "2"))
)
label_sets = st.sampled_from((frozenset({"*"}), frozenset({"a"}))) | st.frozensets(
    st.sampled_from(("*", "a", "b", "c")), max_size=2
)
caller_labels = st.frozensets(st.sampled_from(("a", "b", "c")), min_size=1, max_size=3)
policies = st.builds(
    lambda order, kinds, checks: Policy("p", tuple(kinds), tuple(checks), tuple(order)),
    st.permutations(CRITERIA),
    st.permutations(KINDS),
    st.permutations(VERIFICATIONS),
)


@st.composite
def candidate_lists(draw: st.DrawFn, max_size: int = 12) -> list[Candidate]:
    """Random items, about half of them twins of an earlier one with another value: twins
    rank equally, so ties (agreeing or conflicting) are common rather than rare."""
    result: list[Candidate] = []
    for i in range(draw(st.integers(min_value=0, max_value=max_size))):
        item = draw(candidates(f"mem_{i:02d}"))
        twinned: bool = draw(st.booleans())
        if twinned and result:
            twin = draw(st.sampled_from(result))
            item = dataclasses.replace(twin, memory_id=item.memory_id, value=item.value)
        result.append(item)
    return result


def candidates(memory_id: str) -> st.SearchStrategy[Candidate]:
    return st.builds(
        Candidate,
        memory_id=st.just(memory_id),
        version=st.integers(min_value=1, max_value=3),
        kind=st.sampled_from((*KINDS, *KINDS, "rumour")),
        field=st.sampled_from(FIELDS),
        value=st.sampled_from((1, 2, True, "x", [1])),
        statement=st.just("claim"),
        scope=scopes,
        verification=st.sampled_from(VERIFICATIONS),
        assertion=st.sampled_from(("state", "state", "plan")),
        valid_from=skewed(None, MOMENTS[0]),
        valid_to=skewed(None),
        expires_at=skewed(None),
        activated_at=skewed(MOMENTS[0], MOMENTS[1]),
        deactivated_at=skewed(None),
        visibility=st.lists(label_sets, max_size=3).map(tuple),
        pending_correction=st.booleans(),
    )


queries = st.builds(
    Query,
    context=contexts,
    valid_at=late_moments,
    known_at=late_moments,
    labels=caller_labels,
    fields=st.none() | st.just(FIELDS) | st.just(("f2",)),
    explain=st.just(True),
)


# --- the oracle ----------------------------------------------------------------------------


def visible(c: Candidate, labels: frozenset[str]) -> bool:
    return all("*" in required or required & labels for required in c.visibility)


def in_use(c: Candidate, known_at: datetime) -> bool:
    started = c.activated_at is not None and c.activated_at <= known_at
    return started and (c.deactivated_at is None or known_at < c.deactivated_at)


def matches(c: Candidate, context: dict[str, str] | Any) -> bool:
    return all(
        (dim == "tenant" and value == "*") or context.get(dim) == value
        for dim, value in c.scope.items()
    )


def valid(c: Candidate, valid_at: datetime) -> bool:
    after_start = c.valid_from is None or c.valid_from <= valid_at
    return after_start and (c.valid_to is None or valid_at < c.valid_to)


def applicable_state(c: Candidate, q: Query) -> bool:
    unexpired = c.expires_at is None or q.known_at < c.expires_at
    seen = visible(c, q.labels) and in_use(c, q.known_at)
    fits = matches(c, q.context) and unexpired and valid(c, q.valid_at)
    return seen and fits and c.assertion == "state"


def strength(c: Candidate, policy: Policy) -> tuple[Any, ...]:
    parts: dict[str, Any] = {
        "specificity": sum(1 for d, v in c.scope.items() if (d, v) != ("tenant", "*")),
        "kind": -policy.kind_rank.index(c.kind) if c.kind in policy.kind_rank else -99,
        "verification": -policy.verification_rank.index(c.verification),
        "valid_from": (0,) if c.valid_from is None else (1, c.valid_from),
    }
    # docs/design.md: reviewed before unreviewed, whatever the policy says; then the policy.
    reviewed = c.kind in ("task_fact", "enterprise_rule")
    return (reviewed, *[parts[name] for name in policy.order])


def json_key(value: Any) -> str:
    return f"{type(value).__name__}:{value!r}"


def top_group(cs: list[Candidate], q: Query, policy: Policy, field: str) -> list[Candidate]:
    mine = [c for c in cs if c.field == field and applicable_state(c, q)]
    if not mine:
        return []
    best = max(strength(c, policy) for c in mine)
    return [c for c in mine if strength(c, policy) == best]


def returned_ids(r: Resolution) -> set[str]:
    ids = {f.candidate.memory_id for f in r.facts} | {p.candidate.memory_id for p in r.plans}
    ids |= {row.memory_id for row in r.considered}
    return ids | {i for a in r.abstentions for i in a.memory_ids}


def requested(cs: list[Candidate], q: Query) -> set[str]:
    if q.fields is not None:
        return set(q.fields)
    return {c.field for c in cs if visible(c, q.labels) and in_use(c, q.known_at)}


# --- properties ----------------------------------------------------------------------------


@SETTINGS
@given(candidate_lists(), queries, policies, candidates("mem_99"), st.sampled_from(DIMENSIONS))
def test_an_item_scoped_outside_the_context_never_changes_the_answer(
    cs: list[Candidate], q: Query, policy: Policy, extra: Candidate, dimension: str
) -> None:
    outsider = dataclasses.replace(extra, scope={**extra.scope, dimension: "elsewhere"})
    q = dataclasses.replace(q, fields=FIELDS)

    before = resolve(cs, q, policy)
    after = resolve([*cs, outsider], q, policy)

    assert (after.facts, after.abstentions, after.plans) == (
        before.facts,
        before.abstentions,
        before.plans,
    )
    assert {row for row in after.considered if row.memory_id != "mem_99"} == set(before.considered)
    assert {row.outcome for row in after.considered if row.memory_id == "mem_99"} <= {
        "out_of_scope"
    }


@SETTINGS
@given(candidate_lists(), queries, policies, st.data())
def test_the_answer_does_not_depend_on_candidate_order(
    cs: list[Candidate], q: Query, policy: Policy, data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(cs))

    assert resolve(shuffled, q, policy) == resolve(cs, q, policy)
    assert resolve(iter(shuffled), q, policy) == resolve(tuple(cs), q, policy)


@SETTINGS
@given(candidate_lists(), queries, policies)
def test_a_principal_never_receives_an_item_it_may_not_see(
    cs: list[Candidate], q: Query, policy: Policy
) -> None:
    hidden = {c.memory_id for c in cs if not visible(c, q.labels)}

    r = resolve(cs, q, policy)

    assert not hidden & returned_ids(r)
    texts = [f.reason for f in r.facts] + [a.detail for a in r.abstentions]
    assert not [i for i in hidden for text in texts if i in text]


@SETTINGS
@given(candidate_lists(), queries, policies)
def test_a_stronger_applicable_item_is_never_outranked_by_a_weaker_one(
    cs: list[Candidate], q: Query, policy: Policy
) -> None:
    r = resolve(cs, q, policy)

    for fact in r.facts:
        rivals = [c for c in cs if c.field == fact.field and applicable_state(c, q)]
        assert strength(fact.candidate, policy) == max(strength(c, policy) for c in rivals)
    for field in requested(cs, q):
        top = top_group(cs, q, policy, field)
        if len(top) == 1:
            assert [f.candidate for f in r.facts if f.field == field] == top


@SETTINGS
@given(candidate_lists(), queries, policies)
def test_a_preference_never_wins_where_a_reviewed_item_applies(
    cs: list[Candidate], q: Query, policy: Policy
) -> None:
    r = resolve(cs, q, policy)

    for fact in r.facts:
        rivals = [c for c in cs if c.field == fact.field and applicable_state(c, q)]
        if any(c.kind in ("task_fact", "enterprise_rule") for c in rivals):
            assert fact.candidate.kind != "preference"


@SETTINGS
@given(candidate_lists(), queries, policies)
def test_ties_with_different_values_always_abstain(
    cs: list[Candidate], q: Query, policy: Policy
) -> None:
    r = resolve(cs, q, policy)

    for field in requested(cs, q):
        top = top_group(cs, q, policy, field)
        if len({json_key(c.value) for c in top}) > 1:
            assert [f for f in r.facts if f.field == field] == []
            [abstention] = [a for a in r.abstentions if a.field == field]
            assert abstention.reason == "conflict"
            assert abstention.memory_ids == tuple(sorted({c.memory_id for c in top}))


@SETTINGS
@given(candidate_lists(), queries, policies)
def test_winners_are_applicable_unexpired_in_use_and_valid(
    cs: list[Candidate], q: Query, policy: Policy
) -> None:
    r = resolve(cs, q, policy)

    assert all(applicable_state(f.candidate, q) for f in r.facts)
    for plan in r.plans:
        assert plan.candidate.assertion == "plan"
        # A plan may start after valid_at (it is still ahead); it must not have ended.
        as_state = dataclasses.replace(plan.candidate, assertion="state", valid_from=None)
        assert applicable_state(as_state, q)


@SETTINGS
@given(candidate_lists(), queries, policies)
def test_every_requested_field_gets_exactly_one_fact_or_abstention(
    cs: list[Candidate], q: Query, policy: Policy
) -> None:
    r = resolve(cs, q, policy)

    answered = [f.field for f in r.facts] + [a.field for a in r.abstentions]
    assert sorted(answered) == sorted(requested(cs, q))
    assert [f.field for f in r.facts] == sorted(f.field for f in r.facts)
    assert [(row.field, row.memory_id) for row in r.considered] == sorted(
        (row.field, row.memory_id) for row in r.considered
    )
