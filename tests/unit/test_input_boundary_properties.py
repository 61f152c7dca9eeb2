"""Properties of the input boundary's pure functions (core.inputs): whatever arrives,
they answer a value or a refusal, never an exception the API would turn into a 500."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.errors import InvalidContent, Unparseable
from core.inputs import MAX_JSON_DEPTH, json_depth, load_json, strict_int, text_problem

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=20,
)


@given(st.text())
def test_strict_int_accepts_exactly_the_short_ascii_digit_strings(raw: str) -> None:
    plain = raw.isascii() and raw.isdigit() and len(raw) <= 18

    assert strict_int(raw) == (int(raw) if plain else None)


@given(st.integers(min_value=0, max_value=10**18 - 1))
def test_strict_int_round_trips_every_bounded_number(number: int) -> None:
    assert strict_int(str(number)) == number


@given(st.text())
def test_text_problem_refuses_exactly_nul_and_unencodable_text(value: str) -> None:
    try:
        value.encode("utf-8")
        encodable = True
    except UnicodeEncodeError:
        encodable = False

    assert (text_problem(value) is None) == (encodable and "\x00" not in value)


@given(json_values)
def test_json_depth_matches_the_structure(value: object) -> None:
    def depth(v: object) -> int:
        if isinstance(v, dict):
            return 1 + max((depth(x) for x in v.values()), default=0)
        if isinstance(v, list):
            return 1 + max((depth(x) for x in v), default=0)
        return 0

    assert json_depth(json.dumps(value).encode()) == depth(value)


@given(json_values)
def test_storable_json_loads_back_unchanged(value: object) -> None:
    raw = json.dumps(value).encode()
    has_problem = "\\u0000" in raw.decode() or any(
        0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(value, ensure_ascii=False)
    )

    if has_problem:
        with pytest.raises(InvalidContent):
            load_json(raw)
    else:
        assert load_json(raw) == value


@given(st.binary(max_size=200))
def test_any_bytes_load_as_json_would_or_are_refused_as_4xx(raw: bytes) -> None:
    try:
        value = load_json(raw)
    except (Unparseable, InvalidContent):
        return
    assert json.loads(raw) == value


@given(st.integers(min_value=MAX_JSON_DEPTH + 1, max_value=20_000))
def test_any_nesting_past_the_limit_is_a_parse_error(levels: int) -> None:
    with pytest.raises(Unparseable):
        load_json(b"[" * levels + b"]" * levels)
