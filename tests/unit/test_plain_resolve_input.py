"""The resolve hot path validates the usual input without DRF (``plain_resolve_input``,
issue 14). Whatever it takes, ``ResolveInput`` must take too and validate to the same
data; whatever it leaves, the serializer judges and words. Checked on generated inputs
that mix what agents send with what a serializer trims, converts or refuses."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memory.serializers import ResolveInput, plain_resolve_input

_TEXT = st.one_of(
    st.sampled_from(["ent_1", "order-9", "delivery", "", " padded ", "tab\t", "é", "a" * 41]),
    st.text(max_size=12),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=210),
)
_SCALAR = st.one_of(_TEXT, st.none(), st.booleans(), st.integers(-5, 5), st.floats(0, 1))
_VALUE = st.one_of(
    _SCALAR,
    st.lists(_TEXT, max_size=3),
    st.dictionaries(_TEXT, _TEXT, max_size=3),
    st.dictionaries(_TEXT, _SCALAR, max_size=2),
)
_MEMBERS = ["subject", "context", "fields", "valid_at", "known_at", "task_id", "explain"]
_INPUT = st.dictionaries(st.sampled_from([*_MEMBERS, "other"]), _VALUE, max_size=7)


def _serializer(data: Any) -> dict[str, Any] | None:
    serializer = ResolveInput(data=data)
    return dict(serializer.validated_data) if serializer.is_valid() else None


@settings(max_examples=1500, deadline=None)
@given(_INPUT)
def test_an_input_the_hot_path_takes_validates_the_same_through_the_serializer(data):
    plain = plain_resolve_input(data)
    if plain is not None:
        assert _serializer(data) == plain


@given(
    st.fixed_dictionaries(
        {"subject": st.from_regex(r"ent_[0-9a-z]{1,36}", fullmatch=True)},
        optional={
            "context": st.dictionaries(
                st.sampled_from(["task", "channel", "assistant_use"]),
                st.from_regex(r"[a-z][a-z0-9_-]{0,30}", fullmatch=True),
            ),
            "fields": st.lists(st.sampled_from(["address", "tone", "limit"]), min_size=1),
            "task_id": st.one_of(st.none(), st.from_regex(r"task-[0-9]{1,9}", fullmatch=True)),
            "explain": st.booleans(),
            "valid_at": st.none(),
        },
    )
)
def test_what_agents_send_takes_the_hot_path(data):
    assert plain_resolve_input(data) == _serializer(data) is not None


def test_anything_the_serializer_would_change_or_word_is_left_to_it():
    refused: list[Any] = [
        [],
        {"subject": " ent_1"},  # trimmed by DRF
        {"subject": 7},  # converted to text by DRF
        {"subject": "ent_1", "explain": "true"},
        {"subject": "ent_1", "valid_at": "2026-01-01T00:00:00Z"},
        {"subject": "ent_1", "context": {"task\x00": "x"}},
        {"subject": "ent_1", "fields": []},
        {"subject": "ent_1", "surprise": 1},
        {"subject": "Zoë"},
    ]
    for data in refused:
        assert plain_resolve_input(data) is None, data
