"""The one cursor codec of every paginated list (REST ``next``, MCP ``next_cursor``).

A cursor names the last key of a page. To a client it is an opaque, URL-safe string to
pass back unchanged; here it is ``<payload>.<signature>``: the payload is the key as
canonical ASCII JSON (``["mem_01j…"]``, ``[42]``, ``[-812345, "memory", "mem_01j…"]``)
in unpadded base64url, and the signature an HMAC-SHA256 of it (``django.core.signing``)
with a key derived from ``SECRET_KEY`` and salted with the list's name. So:

- a cursor this API did not give out — garbage, random base64, ``wrI=`` (``²``), full-width
  or Arabic-Indic digits, a real cursor with one character changed, or one given out by
  another list — fails the signature and is a 422 naming ``cursor``, before any of it is
  decoded;
- a cursor that passes the signature is still read strictly (ASCII, canonical JSON, the
  list's part types, bounded integers and strings), so a bug that signs something odd is
  a 422 too, never a 500;
- cursors survive a key rotation while the old key is in ``SECRET_KEY_FALLBACKS``.
  A cursor given out before signed cursors existed is refused like any other: the client
  starts again from the first page (issue 42).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from django.core import signing, validators

from core.errors import InvalidContent
from core.inputs import MAX_INT_DIGITS

Part = int | str

NOT_GIVEN_OUT = "is not a cursor this API gave out"
MAX_CURSOR_CHARS = 400  # the ``cursor`` inputs' ``max_length``
MAX_KEY_CHARS = 200  # an id, a candidate type: far below
_SEPARATOR = "."  # not in the base64url alphabet, and needs no escaping in a URL
# base64url payload, the separator, a base64url SHA-256 digest (32 bytes: 43 characters).
_TOKEN = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}")
# The same shape for an input field: the OpenAPI description then states it as a pattern.
CURSOR_PATTERN = f"^{_TOKEN.pattern}$"
CURSOR_RULE = validators.RegexValidator(CURSOR_PATTERN, NOT_GIVEN_OUT)
_INT_BOUND = 10**MAX_INT_DIGITS


def _canonical(key: Sequence[Part]) -> str:
    return json.dumps(list(key), ensure_ascii=True, separators=(",", ":"))


def _refused() -> InvalidContent:
    return InvalidContent({"cursor": [NOT_GIVEN_OUT]})


@dataclass(frozen=True)
class CursorCodec:
    """The cursors of one list: ``name`` keeps them apart (a cursor of the audit list is
    refused by the memory list), ``parts`` are the types of its key, in order."""

    name: str
    parts: tuple[type[int] | type[str], ...]

    def _signer(self) -> signing.Signer:
        # Built per call: SECRET_KEY and its fallbacks are read when signing, not at import.
        return signing.Signer(salt=f"memgov.cursor.{self.name}", sep=_SEPARATOR)

    def encode(self, key: Sequence[Part]) -> str:
        """The cursor that makes the next page start after ``key``."""
        if not self._fits(key):
            raise ValueError(f"{key!r} is not a key of the {self.name} list")
        payload = base64.urlsafe_b64encode(_canonical(key).encode("ascii")).decode("ascii")
        return self._signer().sign(payload.rstrip("="))

    def decode(self, cursor: object) -> tuple[Part, ...]:
        """The key a cursor holds; anything this list did not give out is a 422."""
        if (
            not isinstance(cursor, str)
            or len(cursor) > MAX_CURSOR_CHARS
            or not _TOKEN.fullmatch(cursor)
        ):
            raise _refused()
        try:
            payload = self._signer().unsign(cursor)
            text = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode("ascii")
            key = json.loads(text)
        except (signing.BadSignature, binascii.Error, UnicodeError, ValueError) as exc:
            raise _refused() from exc
        if not isinstance(key, list) or _canonical(key) != text or not self._fits(key):
            raise _refused()
        return tuple(key)

    def _fits(self, key: Sequence[object]) -> bool:
        return len(key) == len(self.parts) and all(
            _is_part(value, kind) for value, kind in zip(key, self.parts, strict=True)
        )


def _is_part(value: object, kind: type[int] | type[str]) -> bool:
    if kind is int:
        # bool is an int to Python, never a key here.
        return type(value) is int and -_INT_BOUND < value < _INT_BOUND
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_KEY_CHARS
        and value.isascii()
        and value.isprintable()
    )
