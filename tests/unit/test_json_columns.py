"""JSON columns on the hot path are decoded with orjson (``core.sql.json_loads``), which
reads an integer beyond 64 bits as a float: such a document must come back exactly as the
standard library reads it, whatever form the driver hands it in."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from core.sql import json_loads

_INTEGERS = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**64),
    st.integers(min_value=-(10**40), max_value=10**40),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    _INTEGERS,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet="0123456789ab-_ ", max_size=30),
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)


@given(_DOCUMENTS, st.sampled_from(["bytes", "memoryview", "str"]))
def test_a_json_column_reads_as_the_standard_library_reads_it(document: Any, form: str) -> None:
    text = json.dumps(document)
    given_as: Any = {
        "bytes": text.encode(),
        "memoryview": memoryview(text.encode()),
        "str": text,
    }[form]

    assert json_loads(given_as) == json.loads(text)


def test_an_integer_beyond_64_bits_keeps_every_digit_among_other_values() -> None:
    text = '["src_00000000000000001", {"limit": 123456789012345678901234567890}]'

    value = json_loads(memoryview(text.encode()))

    assert value == ["src_00000000000000001", {"limit": 123456789012345678901234567890}]
    assert isinstance(value[1]["limit"], int)
