"""The cache reads its scripts' replies itself (``memory.cache._parsed``): every reply a
script can give, in RESP2 and RESP3, whole or cut anywhere by the network."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.exceptions import NoScriptError, ResponseError

from memory.cache import _Incomplete, _parsed

# What a Lua script can answer: integers, bulk strings (any bytes), nil, nested tables.
_REPLY: st.SearchStrategy[Any] = st.recursive(
    st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.binary(max_size=200)),
    lambda children: st.lists(children, max_size=5),
    max_leaves=20,
)


def _resp(value: Any, *, resp3: bool) -> bytes:
    """The bytes Redis sends for ``value`` (its own encoding, written out by hand)."""
    if value is None:
        return b"_\r\n" if resp3 else b"$-1\r\n"
    if isinstance(value, int):
        return b":%d\r\n" % value
    if isinstance(value, bytes):
        return b"$%d\r\n%b\r\n" % (len(value), value)
    return b"*%d\r\n" % len(value) + b"".join(_resp(item, resp3=resp3) for item in value)


@given(_REPLY, st.booleans())
def test_every_reply_a_script_can_give_is_read_whole_and_to_its_end(
    value: Any, resp3: bool
) -> None:
    data = _resp(value, resp3=resp3)

    assert _parsed(data, 0) == (value, len(data))


@given(_REPLY, st.booleans(), st.data())
def test_a_reply_cut_anywhere_is_incomplete_never_a_shorter_answer(
    value: Any, resp3: bool, data: st.DataObject
) -> None:
    whole = _resp(value, resp3=resp3)
    cut = data.draw(st.integers(0, len(whole) - 1))

    with pytest.raises(_Incomplete):
        _parsed(whole[:cut], 0)


def test_a_resolve_read_reply_gives_its_entry_bytes_as_sent() -> None:
    entry = b'{"policy_version":"1","facts":[{"value":"a\\r\\nb"}]}'
    data = b"*4\r\n:1\r\n$7\r\nmg:res:\r\n$%d\r\n%b\r\n:0\r\n" % (len(entry), entry)

    assert _parsed(data, 0) == ([1, b"mg:res:", entry, 0], len(data))


def test_a_missing_script_is_raised_as_redis_py_raises_it_and_other_errors_as_errors() -> None:
    with pytest.raises(NoScriptError):
        _parsed(b"-NOSCRIPT No matching script. Please use EVAL.\r\n", 0)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        _parsed(b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", 0)
    with pytest.raises(ResponseError, match="unexpected reply type"):
        _parsed(b">2\r\n$10\r\ninvalidate\r\n*0\r\n", 0)  # a push: never asked for
