"""Request bodies are parsed with orjson (``core.inputs.load_json``): every body must get
the answer the standard library gave it, the same value or the same refusal, including
those where orjson alone differs (long integers, lone surrogates, numbers beyond a
double)."""

from __future__ import annotations

import codecs
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.errors import InvalidContent, Unparseable
from core.inputs import MAX_JSON_DEPTH, json_depth, json_text_errors, load_json


def _refuse(name: str) -> Any:
    raise ValueError(name)


def _as_before(raw: bytes) -> Any:
    """The standard library's reading, as load_json did it before orjson."""
    try:
        return load_json_reference(raw)
    except Unparseable:
        return Unparseable
    except InvalidContent as exc:
        return exc.errors


def load_json_reference(raw: bytes) -> Any:
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise Unparseable("deep")
    try:
        data = json.loads(codecs.decode(raw, "utf-8"), parse_constant=_refuse)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Unparseable(str(exc)) from exc
    if errors := json_text_errors(data):
        raise InvalidContent(errors)
    return data


def _now(raw: bytes) -> Any:
    try:
        return load_json(raw)
    except Unparseable:
        return Unparseable
    except InvalidContent as exc:
        return exc.errors


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),  # any code point, lone surrogates and NUL included
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)


@given(_DOCUMENTS, st.booleans())
def test_a_body_reads_as_the_standard_library_read_it(document: Any, ascii_only: bool) -> None:
    text = json.dumps(document, ensure_ascii=ascii_only)
    raw = text.encode("utf-8", "surrogatepass")

    assert _now(raw) == _as_before(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"limit": 123456789012345678901234567890}',
        b'{"a": "\\ud800"}',
        b'{"a": 1e400}',
        b'{"a": NaN}',
        b'{"a": "\xed\xa0\x80"}',
        b"\xef\xbb\xbf{}",
        b'{"a": "tab\there"}',
        b'{"a": 1, "a": 2}',
        b'"\\u0000"',
        b"",
        b"[" * 40 + b"]" * 40,
    ],
)
def test_the_bodies_orjson_alone_reads_otherwise_keep_their_answer(raw: bytes) -> None:
    assert _now(raw) == _as_before(raw)


def test_a_long_integer_in_a_body_keeps_every_digit() -> None:
    value = load_json(b'{"limit": 123456789012345678901234567890}')

    assert value == {"limit": 123456789012345678901234567890}
    assert isinstance(value["limit"], int)
