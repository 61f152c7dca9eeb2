"""The input boundary: every malformed input becomes a 4xx problem before any code uses it.

One place decides what the service accepts, so that the API and the dashboard refuse the
same things the same way (issue 11):

- bodies: at most ``MAX_REQUEST_BODY_BYTES``; a chunked body (no ``Content-Length``) is
  read up to the same limit instead of being silently dropped (413 beyond it);
- JSON: at most ``MAX_JSON_DEPTH`` levels (checked before the recursive decoder runs, so a
  5,000-level body is a 400, not a ``RecursionError``); strings and keys must be
  encodable UTF-8 (no lone surrogates) and hold no NUL, which PostgreSQL's text and jsonb
  cannot store — a 422 naming the member. An MCP tool's arguments, decoded by the MCP
  SDK, pass the same rules (``checked_json``) before any tool reads them;
- the URL's path, headers and form fields: no NUL after decoding (400);
- the query string: each parameter's name and value, percent-decoded, must be valid UTF-8
  without control characters — else a 422 naming the parameter (``query_errors``), since
  Django would hand a view U+FFFD for the bytes it cannot decode;
- integers from the outside (``limit``, ``If-Match``, cursors, ``Content-Length``): ASCII
  digits only and a bounded length, since ``str.isdigit()`` accepts ``²`` and ``int()``
  refuses 5,000 digits.
"""

from __future__ import annotations

import codecs
import json
import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote_to_bytes

from core.errors import InvalidContent, Unparseable

MAX_JSON_DEPTH = 64
MAX_INT_DIGITS = 18  # fits a signed 64-bit column; no identifier or limit needs more

_ASCII_DIGITS = re.compile(r"[0-9]+")
# A JSON string (escapes included) or one bracket; everything else cannot nest.
_STRING_OR_BRACKET = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def strict_int(raw: str, *, max_digits: int = MAX_INT_DIGITS) -> int | None:
    """The value of ``raw`` if it is 1..max_digits ASCII digits, else None."""
    if len(raw) > max_digits or not _ASCII_DIGITS.fullmatch(raw):
        return None
    return int(raw)


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text, or None when it can."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (a lone surrogate is not)"
    return None


def json_depth(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text, without recursion."""
    depth = deepest = 0
    for match in _STRING_OR_BRACKET.finditer(raw):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in (b"]", b"}"):
            depth -= 1
    return deepest


def _members(data: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string (keys included) in decoded JSON with the member path that holds it."""
    stack: list[tuple[Any, str]] = [(data, path)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            yield where or "request", value
        elif isinstance(value, Mapping):
            for key, item in value.items():
                yield where or "request", key
                stack.append((item, f"{where}.{_printable(key)}" if where else _printable(key)))
        elif isinstance(value, list):
            stack.extend((item, f"{where}.{index}") for index, item in enumerate(value))


def _printable(key: str) -> str:
    return key.encode("utf-8", "backslashreplace").decode("utf-8")


def json_text_errors(data: Any) -> dict[str, list[str]]:
    """Members whose strings or keys cannot be stored, as ``{"member": ["why"]}``."""
    errors: dict[str, list[str]] = {}
    for member, value in _members(data, ""):
        if (why := text_problem(value)) is not None:
            errors.setdefault(member, [why])
    return dict(sorted(errors.items()))


def decoded_depth(data: Any) -> int:
    """``json_depth`` of JSON another decoder has already read, without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, depth + 1)
            stack.extend((item, depth + 1) for item in value)
    return deepest


_TOO_DEEP = f"JSON is nested more than {MAX_JSON_DEPTH} levels deep."


def load_json(raw: bytes) -> Any:
    """Decode a JSON body under the boundary's rules (Unparseable 400 / InvalidContent 422)."""
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise Unparseable(_TOO_DEEP)
    try:
        text = codecs.decode(raw, "utf-8")
        data = json.loads(text, parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Unparseable(f"JSON parse error - {exc}") from exc
    return _storable(data)


def checked_json(data: Any) -> Any:
    """JSON decoded elsewhere (an MCP tool's arguments) under the same rules as a body."""
    if decoded_depth(data) > MAX_JSON_DEPTH:
        raise Unparseable(_TOO_DEEP)
    return _storable(data)


def _storable(data: Any) -> Any:
    if errors := json_text_errors(data):
        raise InvalidContent(errors)
    return data


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _query_text_problem(raw: bytes) -> tuple[str, str | None]:
    """A percent-decoded query name or value as text (invalid bytes escaped, for naming),
    and why it is refused, or None when it is not."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace"), "must be valid UTF-8"
    if "\x00" in text:
        return text, "must not contain NUL characters"
    if any(unicodedata.category(char) == "Cc" for char in text):
        return text, "must not contain control characters"
    return text, None


def query_errors(query_string: bytes) -> dict[str, list[str]]:
    """Query parameters that are not text a view may read, as ``{"name": ["why"]}``.

    Read from the raw query string the way Django's ``QueryDict`` reads it (pairs split on
    ``&``, ``+`` a space, percent-escapes decoded), but strictly: invalid UTF-8 (``%FF``),
    NUL (``%00``) and other control characters (``%0A``, ``%7F``, ``%C2%85``) are refused
    where Django would replace or pass them."""
    errors: dict[str, list[str]] = {}
    for pair in query_string.split(b"&"):
        if not pair:
            continue
        raw_name, _, raw_value = pair.partition(b"=")
        name, name_problem = _query_text_problem(unquote_to_bytes(raw_name.replace(b"+", b" ")))
        name = _printable_name(name)
        if name_problem is not None:
            errors.setdefault(name or "query", [f"the name {name_problem}"])
            continue
        _, value_problem = _query_text_problem(unquote_to_bytes(raw_value.replace(b"+", b" ")))
        if value_problem is not None:
            errors.setdefault(name or "query", [value_problem])
    return dict(sorted(errors.items()))


def _printable_name(name: str) -> str:
    """A name as an error may quote it: control characters escaped (``q\\x00``)."""
    return "".join(
        char if unicodedata.category(char) != "Cc" else f"\\x{ord(char):02x}" for char in name
    )
