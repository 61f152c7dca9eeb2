"""The seeds' stories, told against the pure resolver (no Django, no database, no clock)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory.resolver import (
    Abstention,
    Candidate,
    Considered,
    Policy,
    PolicyError,
    Query,
    Resolution,
    check_publishable,
    in_use_at,
    is_visible,
    resolve,
    scope_applies,
    specificity,
)

JAN = datetime(2026, 1, 5, tzinfo=UTC)
FEB = datetime(2026, 2, 15, tzinfo=UTC)
MARCH = datetime(2026, 3, 1, tzinfo=UTC)
APRIL = datetime(2026, 4, 15, tzinfo=UTC)
MAY = datetime(2026, 5, 1, tzinfo=UTC)
JUNE_SAID = datetime(2026, 6, 10, 9, 30, tzinfo=UTC)
NOW = datetime(2026, 6, 20, 12, tzinfo=UTC)
TASK_END = NOW + timedelta(days=2)

POLICY = Policy(version="2026-06-01")
EVERYONE = frozenset({"*"})
SUPPORT = frozenset({"support"})


def memory(
    memory_id: str,
    field: str,
    value: Any,
    *,
    kind: str = "preference",
    scope: Mapping[str, str] | None = None,
    verification: str = "asserted",
    assertion: str = "state",
    valid_from: datetime | None = None,
    valid_to: datetime | None = None,
    expires_at: datetime | None = None,
    activated_at: datetime | None = JAN,
    deactivated_at: datetime | None = None,
    version: int = 1,
    visibility: tuple[frozenset[str], ...] = (EVERYONE,),
    pending_correction: bool = False,
) -> Candidate:
    return Candidate(
        memory_id=memory_id,
        version=version,
        kind=kind,
        field=field,
        value=value,
        statement=f"{field} is {value!r}",
        scope={} if scope is None else scope,
        verification=verification,
        assertion=assertion,
        valid_from=valid_from,
        valid_to=valid_to,
        expires_at=expires_at,
        activated_at=activated_at,
        deactivated_at=deactivated_at,
        source_ids=(f"src_{memory_id}",),
        visibility=visibility,
        pending_correction=pending_correction,
    )


def ask(
    *candidates: Candidate,
    context: Mapping[str, str] | None = None,
    valid_at: datetime = NOW,
    known_at: datetime = NOW,
    labels: frozenset[str] = SUPPORT,
    fields: tuple[str, ...] | None = None,
    explain: bool = False,
    policy: Policy = POLICY,
) -> Resolution:
    query = Query(
        context={} if context is None else context,
        valid_at=valid_at,
        known_at=known_at,
        labels=labels,
        fields=fields,
        explain=explain,
    )
    return resolve(candidates, query, policy)


def winner(resolution: Resolution, field: str) -> tuple[str, int, Any]:
    [fact] = [f for f in resolution.facts if f.field == field]
    return (fact.candidate.memory_id, fact.candidate.version, fact.candidate.value)


def outcomes(resolution: Resolution) -> dict[str, str]:
    return {f"{row.memory_id}@{row.version}": row.outcome for row in resolution.considered}


# --- seed 002: the old address --------------------------------------------------------------

HOME = memory("mem_home", "delivery_address", "Home", verification="confirmed")
OFFICE = memory(
    "mem_office",
    "delivery_address",
    "Office",
    kind="task_fact",
    scope={"task": "order-a"},
    verification="verified_record",
    valid_from=JUNE_SAID,
    expires_at=TASK_END,
    activated_at=JUNE_SAID,
)


def test_task_instruction_overrides_preference_until_it_expires() -> None:
    during = ask(HOME, OFFICE, context={"task": "order-a"})
    after = ask(
        HOME,
        OFFICE,
        context={"task": "order-a"},
        valid_at=TASK_END,
        known_at=TASK_END,
        explain=True,
    )

    assert winner(during, "delivery_address") == ("mem_office", 1, "Office")
    assert during.facts[0].reason == (
        "task scope is more specific than the preference (mem_home, unscoped)"
    )
    assert during.facts[0].qualifiers == ()
    assert winner(after, "delivery_address") == ("mem_home", 1, "Home")
    assert after.facts[0].reason == "only applicable fact"
    assert after.facts[0].qualifiers == ("valid_from_unknown",)
    assert outcomes(after) == {"mem_home@1": "selected", "mem_office@1": "expired"}


def test_order_b_still_gets_home_address() -> None:
    resolution = ask(HOME, OFFICE, context={"task": "order-b"}, explain=True)

    assert winner(resolution, "delivery_address") == ("mem_home", 1, "Home")
    assert outcomes(resolution) == {"mem_home@1": "selected", "mem_office@1": "out_of_scope"}
    assert resolution.abstentions == ()


def test_correction_is_used_from_its_activation_and_the_old_version_before() -> None:
    old = memory(
        "mem_office",
        "delivery_address",
        "Old office",
        kind="task_fact",
        scope={"task": "order-a"},
        activated_at=JAN,
        deactivated_at=JUNE_SAID,
    )
    new = memory(
        "mem_office",
        "delivery_address",
        "Office",
        kind="task_fact",
        scope={"task": "order-a"},
        activated_at=JUNE_SAID,
        version=2,
    )

    current = ask(old, new, context={"task": "order-a"})
    told_in_may = ask(old, new, context={"task": "order-a"}, known_at=MAY)

    assert winner(current, "delivery_address") == ("mem_office", 2, "Office")
    assert winner(told_in_may, "delivery_address") == ("mem_office", 1, "Old office")


def test_active_version_awaiting_its_correction_is_flagged() -> None:
    home = memory("mem_home", "delivery_address", "Home", pending_correction=True, valid_from=JAN)

    [fact] = ask(home).facts

    assert fact.qualifiers == ("pending_correction",)


# --- seed 001: the procurement exception ----------------------------------------------------

TENANT_RULE = memory(
    "mem_rule",
    "material_check",
    "required",
    kind="enterprise_rule",
    scope={"tenant": "*"},
    verification="verified_record",
)
P9_EXCEPTION = memory(
    "mem_apr2291",
    "material_check",
    "follow exception APR-2291",
    kind="enterprise_rule",
    scope={"project": "P-9", "supplier": "S-7"},
    verification="verified_record",
)
B3_APPROVAL = memory(
    "mem_b3",
    "material_check",
    "approved batch, skip",
    kind="task_fact",
    scope={"task": "purchase-41", "batch": "B-3"},
    verification="verified_record",
)


def test_exception_for_project_p9_applies_to_p9() -> None:
    resolution = ask(TENANT_RULE, P9_EXCEPTION, context={"project": "P-9", "supplier": "S-7"})

    assert winner(resolution, "material_check") == ("mem_apr2291", 1, "follow exception APR-2291")
    assert resolution.facts[0].reason == (
        "project+supplier scope is more specific than the enterprise_rule (mem_rule, tenant-wide)"
    )


def test_exception_for_project_p9_does_not_apply_to_p10() -> None:
    resolution = ask(
        TENANT_RULE, P9_EXCEPTION, context={"project": "P-10", "supplier": "S-7"}, explain=True
    )

    assert winner(resolution, "material_check") == ("mem_rule", 1, "required")
    assert outcomes(resolution) == {"mem_apr2291@1": "out_of_scope", "mem_rule@1": "selected"}


def test_exception_does_not_apply_when_the_context_lacks_a_scoped_dimension() -> None:
    resolution = ask(TENANT_RULE, P9_EXCEPTION, context={"project": "P-9"})

    assert winner(resolution, "material_check") == ("mem_rule", 1, "required")


def test_exception_for_batch_b3_falls_back_to_tenant_wide_rule_for_b4() -> None:
    b3 = ask(TENANT_RULE, B3_APPROVAL, context={"task": "purchase-41", "batch": "B-3"})
    b4 = ask(TENANT_RULE, B3_APPROVAL, context={"task": "purchase-41", "batch": "B-4"})

    assert winner(b3, "material_check") == ("mem_b3", 1, "approved batch, skip")
    assert winner(b4, "material_check") == ("mem_rule", 1, "required")


def test_revoked_basis_leaves_the_field_to_what_resolved_before() -> None:
    retired = memory(
        "mem_apr2291",
        "material_check",
        "follow exception APR-2291",
        kind="enterprise_rule",
        scope={"project": "P-9"},
        deactivated_at=JUNE_SAID,
    )

    resolution = ask(TENANT_RULE, retired, context={"project": "P-9"}, explain=True)

    assert winner(resolution, "material_check") == ("mem_rule", 1, "required")
    assert outcomes(resolution) == {"mem_rule@1": "selected"}


# --- seed 000: two times and plans ---------------------------------------------------------

MUMBAI_AS_FIRST_TOLD = memory(
    "mem_mumbai", "home_city", "Mumbai", activated_at=JAN, deactivated_at=JUNE_SAID
)
MUMBAI_UNTIL_MARCH = memory(
    "mem_mumbai", "home_city", "Mumbai", valid_to=MARCH, activated_at=JUNE_SAID, version=2
)
PUNE = memory("mem_pune", "home_city", "Pune", valid_from=MARCH, activated_at=JUNE_SAID)
CITY_HISTORY = (MUMBAI_AS_FIRST_TOLD, MUMBAI_UNTIL_MARCH, PUNE)


def test_moved_to_pune_in_march_said_in_june() -> None:
    february = ask(*CITY_HISTORY, valid_at=FEB)
    april = ask(*CITY_HISTORY, valid_at=APRIL, explain=True)
    now = ask(*CITY_HISTORY)
    told_in_may = ask(*CITY_HISTORY, valid_at=APRIL, known_at=MAY)

    assert winner(february, "home_city") == ("mem_mumbai", 2, "Mumbai")
    assert february.facts[0].qualifiers == ("valid_from_unknown",)
    assert winner(april, "home_city") == ("mem_pune", 1, "Pune")
    assert outcomes(april) == {"mem_mumbai@2": "not_valid_at_time", "mem_pune@1": "selected"}
    assert winner(now, "home_city") == ("mem_pune", 1, "Pune")
    assert winner(told_in_may, "home_city") == ("mem_mumbai", 1, "Mumbai")


def test_moved_to_pune_in_march_without_an_earlier_city_abstains_for_february() -> None:
    resolution = ask(PUNE, valid_at=FEB)

    assert resolution.facts == ()
    assert resolution.abstentions == (
        Abstention(
            "home_city",
            "not_valid_at_time",
            "memory for home_city applies to this context but is not valid at "
            "2026-02-15T00:00:00+00:00",
            ("mem_pune",),
        ),
    )


def test_later_valid_from_wins_when_everything_else_ties() -> None:
    mumbai = memory("mem_mumbai", "home_city", "Mumbai")

    resolution = ask(mumbai, PUNE, valid_at=APRIL)

    assert winner(resolution, "home_city") == ("mem_pune", 1, "Pune")
    assert resolution.facts[0].reason == (
        "later valid_from than mem_mumbai (2026-03-01T00:00:00+00:00 after unknown start)"
    )


ACME = memory("mem_acme", "employer", "Acme", verification="confirmed")
NOVA = memory("mem_nova", "employer", "Nova", assertion="plan")


def test_joining_nova_next_month_is_a_plan_never_the_state() -> None:
    now = ask(ACME, NOVA, explain=True)
    next_month = ask(ACME, NOVA, valid_at=NOW + timedelta(days=40))

    for resolution in (now, next_month):
        assert winner(resolution, "employer") == ("mem_acme", 1, "Acme")
        assert [(p.field, p.candidate.memory_id) for p in resolution.plans] == [
            ("employer", "mem_nova")
        ]
    assert now.facts[0].reason == "only applicable fact"
    assert outcomes(now) == {"mem_acme@1": "selected", "mem_nova@1": "selected"}


def test_a_plan_starting_next_month_is_listed_now_and_a_finished_one_is_not() -> None:
    next_month = memory(
        "mem_nova", "employer", "Nova", assertion="plan", valid_from=NOW + timedelta(days=30)
    )
    abandoned = memory(
        "mem_orbit", "employer", "Orbit", assertion="plan", valid_to=NOW - timedelta(days=1)
    )

    resolution = ask(ACME, next_month, abandoned)

    assert winner(resolution, "employer") == ("mem_acme", 1, "Acme")
    assert [p.candidate.memory_id for p in resolution.plans] == ["mem_nova"]


def test_field_with_only_a_plan_abstains() -> None:
    resolution = ask(NOVA)

    assert resolution.facts == ()
    assert [p.candidate.memory_id for p in resolution.plans] == ["mem_nova"]
    assert resolution.abstentions == (
        Abstention(
            "employer",
            "no_applicable_fact",
            "only plans exist for employer; a plan is never the current state",
            ("mem_nova",),
        ),
    )


# --- ties ----------------------------------------------------------------------------------


def test_two_equally_ranked_different_values_abstain_with_conflict() -> None:
    tables = memory("mem_a", "report_format", "tables")
    charts = memory("mem_b", "report_format", "charts")

    resolution = ask(charts, tables, explain=True)

    assert resolution.facts == ()
    assert resolution.abstentions == (
        Abstention(
            "report_format",
            "conflict",
            "2 equally ranked memories give different values for report_format (mem_a, mem_b); "
            "the policy cannot choose, so none is used",
            ("mem_a", "mem_b"),
        ),
    )
    assert outcomes(resolution) == {"mem_a@1": "outranked", "mem_b@1": "outranked"}


def test_two_equally_ranked_equal_values_agree() -> None:
    first = memory("mem_a", "report_format", {"style": "tables", "rows": [1, 2]})
    second = memory("mem_b", "report_format", {"rows": [1, 2], "style": "tables"})

    resolution = ask(second, first, explain=True)

    assert winner(resolution, "report_format") == ("mem_a", 1, first.value)
    assert resolution.facts[0].reason == "same value as equally ranked mem_b"
    assert outcomes(resolution) == {"mem_a@1": "selected", "mem_b@1": "outranked"}


def test_true_and_one_are_different_json_values() -> None:
    resolution = ask(memory("mem_a", "opt_in", True), memory("mem_b", "opt_in", 1))

    assert [a.reason for a in resolution.abstentions] == ["conflict"]


def test_a_stronger_item_above_a_tie_still_wins() -> None:
    tied_a = memory("mem_a", "report_format", "tables")
    tied_b = memory("mem_b", "report_format", "charts")
    confirmed = memory("mem_c", "report_format", "tables", verification="confirmed")

    resolution = ask(tied_a, tied_b, confirmed)

    assert winner(resolution, "report_format") == ("mem_c", 1, "tables")
    assert resolution.facts[0].reason == "confirmed outranks asserted (mem_a)"


# --- visibility ----------------------------------------------------------------------------

FINANCE_ONLY = memory(
    "mem_margin",
    "discount_limit",
    "12%",
    kind="task_fact",
    scope={"task": "deal-7"},
    visibility=(EVERYONE, frozenset({"finance"})),
)
PUBLIC_LIMIT = memory("mem_limit", "discount_limit", "5%", kind="enterprise_rule")


def test_item_with_a_source_the_caller_may_not_see_is_never_returned() -> None:
    resolution = ask(
        FINANCE_ONLY, PUBLIC_LIMIT, context={"task": "deal-7"}, labels=SUPPORT, explain=True
    )

    assert winner(resolution, "discount_limit") == ("mem_limit", 1, "5%")
    assert resolution.facts[0].reason == "only applicable fact"
    assert outcomes(resolution) == {"mem_limit@1": "selected"}


def test_caller_with_every_required_label_sees_the_item() -> None:
    labels = frozenset({"support", "finance"})

    resolution = ask(FINANCE_ONLY, PUBLIC_LIMIT, context={"task": "deal-7"}, labels=labels)

    assert winner(resolution, "discount_limit") == ("mem_margin", 1, "12%")


def test_hidden_field_is_not_even_named_unless_asked_for() -> None:
    unasked = ask(FINANCE_ONLY, context={"task": "deal-7"})
    asked = ask(FINANCE_ONLY, context={"task": "deal-7"}, fields=("discount_limit",))

    assert unasked == Resolution((), (), (), ())
    assert asked.abstentions == (
        Abstention(
            "discount_limit",
            "no_applicable_fact",
            "no memory for discount_limit applies to this context",
        ),
    )


def test_is_visible_needs_every_label_set() -> None:
    assert is_visible((), frozenset())
    assert is_visible((EVERYONE,), frozenset())
    assert is_visible((frozenset({"a", "b"}), frozenset({"c"})), frozenset({"b", "c"}))
    assert not is_visible((frozenset({"a"}), frozenset({"c"})), frozenset({"a"}))
    assert not is_visible((frozenset(),), frozenset({"a", "*"}))


# --- explain, fields, system time ----------------------------------------------------------


def test_explain_lists_every_outcome_and_nothing_unseen_or_unused() -> None:
    candidates = (
        memory("mem_sel", "f", 1, kind="task_fact", scope={"task": "t"}),
        memory("mem_out", "f", 2),
        memory("mem_far", "f", 3, scope={"task": "other"}),
        memory("mem_late", "f", 4, valid_from=NOW + timedelta(days=1)),
        memory("mem_exp", "f", 5, expires_at=NOW),
        memory("mem_hidden", "f", 6, visibility=(frozenset({"hr"}),)),
        memory("mem_future", "f", 7, activated_at=NOW + timedelta(seconds=1)),
        memory("mem_never", "f", 8, activated_at=None),
    )

    resolution = ask(*candidates, context={"task": "t"}, explain=True)

    assert resolution.considered == (
        Considered("mem_exp", 1, "f", "expired"),
        Considered("mem_far", 1, "f", "out_of_scope"),
        Considered("mem_late", 1, "f", "not_valid_at_time"),
        Considered("mem_out", 1, "f", "outranked"),
        Considered("mem_sel", 1, "f", "selected"),
    )
    assert ask(*candidates, context={"task": "t"}).considered == ()


def test_requested_fields_limit_the_answer_and_name_the_empty_ones() -> None:
    resolution = ask(HOME, ACME, fields=("delivery_address", "shoe_size"), explain=True)

    assert [f.field for f in resolution.facts] == ["delivery_address"]
    assert resolution.abstentions == (
        Abstention(
            "shoe_size", "no_applicable_fact", "no memory for shoe_size applies to this context"
        ),
    )
    assert outcomes(resolution) == {"mem_home@1": "selected"}


def test_expired_only_field_says_so() -> None:
    resolution = ask(OFFICE, context={"task": "order-a"}, known_at=TASK_END)

    assert resolution.abstentions == (
        Abstention(
            "delivery_address",
            "no_applicable_fact",
            "the memory for delivery_address has expired",
            ("mem_office",),
        ),
    )


def test_every_field_is_answered_in_field_order() -> None:
    resolution = ask(PUNE, ACME, HOME, NOVA)

    assert [f.field for f in resolution.facts] == ["delivery_address", "employer", "home_city"]


def test_in_use_at_is_half_open_in_system_time() -> None:
    retired = memory("m", "f", 1, activated_at=JAN, deactivated_at=MAY)

    assert in_use_at(retired, JAN)
    assert not in_use_at(retired, JAN - timedelta(microseconds=1))
    assert not in_use_at(retired, MAY)
    assert not in_use_at(memory("m", "f", 1, activated_at=None), NOW)


def test_valid_to_is_exclusive_and_expiry_at_known_at_is_expired() -> None:
    until_march = memory("m", "f", 1, valid_to=MARCH)
    ends_now = memory("m", "f", 1, expires_at=NOW)

    assert ask(until_march, valid_at=MARCH).abstentions[0].reason == "not_valid_at_time"
    assert ask(until_march, valid_at=MARCH - timedelta(microseconds=1)).facts != ()
    assert ask(ends_now, known_at=NOW).facts == ()
    assert ask(ends_now, known_at=NOW - timedelta(microseconds=1)).facts != ()


# --- scope ---------------------------------------------------------------------------------


def test_scope_applies_and_specificity() -> None:
    assert scope_applies({}, {"task": "t"})
    assert scope_applies({"tenant": "*"}, {})
    assert scope_applies({"task": "t"}, {"task": "t", "project": "p"})
    assert not scope_applies({"task": "t"}, {"task": "u"})
    assert not scope_applies({"task": "t", "project": "p"}, {"task": "t"})
    assert specificity({}) == 0
    assert specificity({"tenant": "*"}) == 0
    assert specificity({"tenant": "*", "project": "p"}) == 1
    assert specificity({"task": "t", "batch": "b"}) == 2


def test_literal_star_outside_tenant_is_not_a_wildcard() -> None:
    assert not scope_applies({"project": "*"}, {"project": "P-9"})
    assert specificity({"project": "*"}) == 1


# --- policy --------------------------------------------------------------------------------


def test_policy_defaults_follow_the_design() -> None:
    assert POLICY.to_precedence() == {
        "order": ["specificity", "kind", "verification", "valid_from"],
        "kind_rank": ["task_fact", "enterprise_rule", "preference"],
        "verification_rank": ["verified_record", "confirmed", "asserted"],
    }
    assert Policy.from_precedence("v1", {}) == Policy(version="v1")


def test_policy_round_trips_through_precedence() -> None:
    precedence = {
        "order": ["kind", "specificity"],
        "kind_rank": ["enterprise_rule", "task_fact", "preference"],
        "verification_rank": ["confirmed", "verified_record", "asserted"],
    }

    policy = Policy.from_precedence("v2", precedence)

    assert policy.order == ("kind", "specificity")
    assert policy.to_precedence() == precedence


@pytest.mark.parametrize(
    ("precedence", "message"),
    [
        (
            {"order": ["kind", "recency"]},
            "precedence.order: unknown 'recency'; "
            "allowed: specificity, kind, verification, valid_from",
        ),
        ({"order": ["kind", "kind"]}, "precedence.order: duplicate 'kind'"),
        ({"order": []}, "precedence.order: must name at least one criterion"),
        ({"order": "kind"}, "precedence.order: must be a list of strings"),
        ({"order": ["kind", 3]}, "precedence.order: must be a list of strings"),
        (
            {"kind_rank": ["task_fact", "preference"]},
            "precedence.kind_rank: missing 'enterprise_rule'; every one must be ranked",
        ),
        (
            {"verification_rank": ["asserted", "confirmed", "verified_record", "rumour"]},
            "precedence.verification_rank: unknown 'rumour'; "
            "allowed: verified_record, confirmed, asserted",
        ),
        (
            {"sort": ["kind"]},
            "precedence.sort: unknown key; allowed: order, kind_rank, verification_rank",
        ),
    ],
)
def test_policy_from_precedence_refuses_bad_documents(
    precedence: dict[str, Any], message: str
) -> None:
    with pytest.raises(PolicyError) as raised:
        Policy.from_precedence("v3", precedence)

    assert str(raised.value) == message
    assert isinstance(raised.value, ValueError)


def test_policy_needs_a_version() -> None:
    with pytest.raises(PolicyError, match="version"):
        Policy(version="")


PREFERRED_TABLES = memory("mem_pref", "report_format", "tables", scope={"task": "t1"})
RULE_CHARTS = memory(
    "mem_rule", "report_format", "charts", kind="enterprise_rule", scope={"tenant": "*"}
)


TASK_RULE_CHARTS = memory(
    "mem_task_rule", "report_format", "charts", kind="enterprise_rule", scope={"task": "t1"}
)
TASK_FACT_TABLES = memory(
    "mem_fact", "report_format", "tables", kind="task_fact", scope={"task": "t1"}
)


def test_custom_policy_order_changes_the_winner() -> None:
    # Within the reviewed group the policy decides: by default the task_fact outranks the
    # rule of equal scope by kind; with verification first, the confirmed rule wins.
    rule = dataclasses.replace(TASK_RULE_CHARTS, verification="confirmed")
    verification_first = Policy.from_precedence("v4", {"order": ["verification", "kind"]})

    default = ask(TASK_FACT_TABLES, rule, context={"task": "t1"})
    custom = ask(TASK_FACT_TABLES, rule, context={"task": "t1"}, policy=verification_first)

    assert winner(default, "report_format") == ("mem_fact", 1, "tables")
    assert default.facts[0].reason == "task_fact outranks enterprise_rule (mem_task_rule)"
    assert winner(custom, "report_format") == ("mem_task_rule", 1, "charts")
    assert custom.facts[0].reason == "confirmed outranks asserted (mem_fact)"


def test_a_narrow_preference_never_outranks_a_tenant_wide_rule() -> None:
    # The review bypass of issue 9: an exception filed as a "preference" with a business
    # scope is more specific than the approved rule, and still loses to it.
    smuggled = memory(
        "mem_smuggled",
        "report_format",
        "tables",
        scope={"project": "P-9", "supplier": "S-17", "batch": "B-3"},
    )
    context = {"project": "P-9", "supplier": "S-17", "batch": "B-3", "task": "t1"}

    resolution = ask(smuggled, RULE_CHARTS, context=context, explain=True)

    assert winner(resolution, "report_format") == ("mem_rule", 1, "charts")
    assert resolution.facts[0].reason == (
        "enterprise_rule was reviewed and outranks the unreviewed preference "
        "(mem_smuggled, batch+project+supplier scope) whatever its scope"
    )
    assert outcomes(resolution) == {"mem_rule@1": "selected", "mem_smuggled@1": "outranked"}


@pytest.mark.parametrize("order", [["specificity", "kind"], ["kind"], ["valid_from"]])
def test_no_policy_order_lets_a_preference_outrank_a_reviewed_fact(order: list[str]) -> None:
    policy = Policy.from_precedence("v5", {"order": order})

    resolution = ask(PREFERRED_TABLES, RULE_CHARTS, context={"task": "t1"}, policy=policy)

    assert winner(resolution, "report_format") == ("mem_rule", 1, "charts")


def test_a_preference_still_wins_among_preferences_by_specificity() -> None:
    general = memory("mem_general", "report_format", "charts")

    resolution = ask(general, PREFERRED_TABLES, context={"task": "t1"})

    assert winner(resolution, "report_format") == ("mem_pref", 1, "tables")
    assert resolution.facts[0].reason == (
        "task scope is more specific than the preference (mem_general, unscoped)"
    )


def test_a_policy_ranking_preference_above_a_reviewed_kind_cannot_be_published() -> None:
    preference_first = Policy.from_precedence(
        "v5", {"kind_rank": ["preference", "task_fact", "enterprise_rule"]}
    )

    with pytest.raises(PolicyError) as raised:
        check_publishable(preference_first)

    assert str(raised.value) == (
        "precedence.kind_rank: 'preference' must be ranked last: an unreviewed item never "
        "outranks a reviewed one (task_fact, enterprise_rule)"
    )
    check_publishable(Policy(version="v6"))  # the default is publishable
    # Even a stored one (published before the rule) cannot put the preference first.
    resolution = ask(RULE_CHARTS, PREFERRED_TABLES, context={"task": "t1"}, policy=preference_first)
    assert winner(resolution, "report_format") == ("mem_rule", 1, "charts")


def test_unknown_kind_ranks_below_every_known_kind() -> None:
    odd = memory("mem_odd", "f", "x", kind="rumour")
    pref = memory("mem_pref", "f", "y")

    resolution = ask(odd, pref)

    assert winner(resolution, "f") == ("mem_pref", 1, "y")
    assert resolution.facts[0].reason == "preference outranks rumour (mem_odd)"
