"""The cache packs its script commands itself (``memory.cache._packed``): the bytes must be
exactly those redis-py would send for the same arguments (text, bytes, numbers)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from redis._parsers.encoders import Encoder
from redis.connection import PythonRespSerializer

from memory.cache import _packed

_REDIS_PY = PythonRespSerializer(6000, Encoder("utf-8", "strict", False).encode)
_ARGUMENT = st.one_of(
    st.text(st.characters(codec="utf-8")),
    st.binary(max_size=300),
    st.integers(min_value=-(2**63), max_value=2**64),
    st.floats(allow_nan=False),
)


def test_a_resolve_script_call_is_packed_as_redis_py_packs_it() -> None:
    arguments = ("EVALSHA", "a" * 40, 2, "mg:gen:1:ent_x", "mg:gen:1", 2**61, "0.5", b"\x00\r\n")

    assert _packed(*arguments) == b"".join(_REDIS_PY.pack(*arguments))


@given(st.lists(_ARGUMENT, min_size=1, max_size=20))
def test_any_text_bytes_or_integers_are_packed_as_redis_py_packs_them(
    arguments: list[str | bytes | int | float],
) -> None:
    assert _packed("EVALSHA", *arguments) == b"".join(_REDIS_PY.pack("EVALSHA", *arguments))
