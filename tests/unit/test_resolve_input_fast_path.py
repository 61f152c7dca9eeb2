"""The resolve body's fast path (``agent_interface.resolve_input``, issue 46) gives exactly what
``ResolveInput`` gives for a plainly valid body, and leaves every other body to the
serializer, so refusals stay the serializer's own. Generated bodies, valid and invalid,
hold the two to the same answer; the explicit cases show the edges a reader would ask
about."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.http import QueryDict
from hypothesis import event, given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ValidationError
from rest_framework.serializers import Serializer

from agent_interface.answers import resolve_validated, validated
from agent_interface.resolve_input import MEMBERS, plainly_valid
from agent_interface.serializers import ResolveInput
from core.errors import InvalidContent

SETTINGS = settings(deadline=None, max_examples=400)

# --- generated bodies ----------------------------------------------------------------------

junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
plain_text = st.from_regex(r"[A-Za-z0-9_.\-]{1,30}", fullmatch=True)
whitespace = st.sampled_from(["", " ", "\t", "\n ", "\u00a0", "\u2003", "\x1f"])
padded = st.tuples(whitespace, plain_text, whitespace).map("".join)
# Around each limit (40, 100, 200), trimmed or not.
long_text = st.tuples(st.integers(35, 205), whitespace).map(lambda t: "x" * t[0] + t[1])
odd_text = st.sampled_from(
    ["", "   ", "a\x00b", "\ud800", "x\udfff", "Zürich", "東京", "\u00a0\u00a0", "null", "7"]
)
texts = plain_text | padded | long_text | odd_text | st.text(max_size=12)

zones = st.sampled_from(["Z", "z", "+00:00", "+02:00", "-05:30", "", "+14:00", "-23:59"])
stamps = st.datetimes()  # naive, years 1 to 9999: the zone is added as text
times = (
    st.tuples(stamps, zones).map(lambda t: t[0].isoformat() + t[1])
    | st.sampled_from(
        [
            "2026-04-15T00:00:00Z",
            "2026-04-15T00:00:00",  # naive: refused
            "2026-04-15",  # a date: refused
            "2026-13-01T00:00:00Z",
            "2026-04-15 00:00:00+02:00",
            " 2026-04-15T00:00:00Z ",
            "0001-01-01T00:00:00+01:00",  # out of range once in UTC
            "9999-12-31T23:59:59-01:00",
            "yesterday",
            "",
        ]
    )
    | st.text(max_size=25)
)

members: dict[str, st.SearchStrategy[Any]] = {
    "subject": texts | junk,
    "fields": st.lists(texts, max_size=4) | st.lists(plain_text, min_size=99, max_size=101) | junk,
    "context": st.dictionaries(st.text(max_size=8), texts | junk, max_size=4) | junk,
    "valid_at": times | junk,
    "known_at": times | junk,
    "task_id": texts | junk,
    "explain": st.booleans() | junk,
}
unknown = st.dictionaries(
    st.sampled_from(["contxt", "status", "fields ", "Subject", "idempotency_key"]) | st.text(),
    junk,
    max_size=2,
)
# What a caller sends nearly always: every member plainly valid.
plain_bodies = st.fixed_dictionaries(
    {"subject": plain_text | padded},
    optional={
        "fields": st.lists(plain_text, min_size=1, max_size=5),
        "context": st.dictionaries(st.from_regex(r"[a-z]{1,10}", fullmatch=True), plain_text),
        "valid_at": st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat()) | st.none(),
        "known_at": st.none(),
        "task_id": plain_text | st.none(),
        "explain": st.booleans(),
    },
)
# A plain body with one member given any value, or with any members, or anything at all.
one_member_changed = st.tuples(
    plain_bodies,
    st.sampled_from(sorted(members)).flatmap(lambda n: st.tuples(st.just(n), members[n])),
).map(lambda t: {**t[0], t[1][0]: t[1][1]})
bodies = (
    one_member_changed
    | st.tuples(plain_bodies, unknown).map(lambda t: {**t[0], **t[1]})
    | st.fixed_dictionaries({}, optional=members)
    | junk
)


def _outcome(validate: Any, body: Any) -> tuple[str, Any]:
    """What a validation answers: the data exactly (``repr``: types, key order, time zone)
    or the refusal's class and detail (the members, messages and codes of the 422)."""
    try:
        return "valid", repr(validate(body))
    except InvalidContent as exc:
        return "refused", (type(exc), exc.errors)
    except ValidationError as exc:
        return "refused", (type(exc), exc.detail)


@SETTINGS
@given(bodies)
def test_any_body_is_answered_exactly_as_the_serializer_answers_it(body: Any) -> None:
    assert _outcome(resolve_validated, body) == _outcome(
        lambda data: validated(ResolveInput, data), body
    )


@SETTINGS
@given(bodies)
def test_the_fast_path_reads_only_bodies_the_serializer_accepts_as_it_reads_them(
    body: Any,
) -> None:
    fast = plainly_valid(body)
    event("read by the fast path" if fast is not None else "left to the serializer")

    if fast is not None:
        assert _outcome(lambda data: validated(ResolveInput, data), body) == ("valid", repr(fast))


@SETTINGS
@given(plain_bodies)
def test_every_plainly_valid_body_is_read_without_the_serializer(body: dict[str, Any]) -> None:
    fast = plainly_valid(body)

    assert fast is not None
    assert repr(fast) == repr(validated(ResolveInput, body))


# --- explicit cases ------------------------------------------------------------------------

BENCH_BODY = {  # bench.generate.context_for: what the warm resolve benchmark sends
    "subject": "ent_01HZX3K9Q8V7W6T5R4P3N2M1B0",
    "context": {"task": "T-7-1", "project": "P-7", "supplier": "S-7", "batch": "B-7"},
}


def test_the_fast_path_knows_exactly_the_serializers_members():
    """A member added to ResolveInput would only be left to the serializer; one removed
    would be taken here and refused there: either way this names the drift first."""
    shape: Serializer[Any] = ResolveInput()  # ``fields`` is also one of its members' names

    assert set(shape.fields) == MEMBERS


def test_the_benchmarked_body_is_read_by_the_fast_path_as_the_serializer_reads_it():
    fast = plainly_valid(BENCH_BODY)

    assert fast == {**BENCH_BODY, "explain": False}
    assert repr(fast) == repr(validated(ResolveInput, BENCH_BODY))


def test_texts_are_trimmed_as_the_serializer_trims_them_and_duplicates_kept():
    body = {"subject": " ent_1\n", "fields": ["home_city ", "home_city"], "task_id": "\tt-9"}

    fast = plainly_valid(body)

    assert fast == {
        "subject": "ent_1",
        "fields": ["home_city", "home_city"],
        "task_id": "t-9",
        "explain": False,
    }
    assert repr(fast) == repr(validated(ResolveInput, body))


def test_a_time_with_an_offset_is_read_by_the_serializers_own_field_in_utc():
    body = {"subject": "ent_1", "valid_at": "2026-04-15T02:00:00+02:00", "known_at": None}

    fast = plainly_valid(body)

    assert fast is not None
    assert fast["valid_at"] == datetime(2026, 4, 15, tzinfo=UTC)
    assert fast["known_at"] is None
    assert repr(fast) == repr(validated(ResolveInput, body))


@pytest.mark.parametrize(
    "body",
    [
        {"subject": "ent_1", "contxt": {"task": "order-a"}},  # a typo: named in the 422
        {"subject": "x" * 41},
        {"subject": "   "},
        {"subject": "ent_1", "fields": []},
        {"subject": "ent_1", "context": {"task": None}},
        {"subject": "ent_1", "valid_at": "2026-04-15T00:00:00"},  # no zone
        {"subject": "ent_1", "explain": "true"},
        {"subject": "a\x00b"},
        {"subject": 7},
        ["ent_1"],
    ],
)
def test_an_unusual_or_invalid_body_is_left_to_the_serializer(body: Any):
    assert plainly_valid(body) is None
    assert _outcome(resolve_validated, body)[0] == "refused"


def test_a_form_shaped_body_is_left_to_the_serializer_though_it_is_a_dict():
    body = QueryDict("subject=ent_1")

    assert plainly_valid(body) is None


def test_a_refusal_names_the_members_the_serializer_names():
    with pytest.raises(ValidationError) as refused:
        resolve_validated({"subjct": "ent_1", "explain": "no"})

    detail = refused.value.detail
    assert isinstance(detail, dict)
    assert sorted(detail) == ["explain", "subjct", "subject"]
    assert detail["subjct"] == ["is not a member of this request; did you mean 'subject'?"]
