"""Field catalog value schemas that are safe to run (docs/api.md, Field catalog; issue 42).

A tenant admin writes the schema; every agent's proposal of the field runs it. So a schema
must never make the web process reach the network or the file system, hang on a regular
expression, recurse without end, or cost without bound:

- ``$ref`` is a JSON pointer into the same schema (``#`` or ``#/…``), resolved in a
  registry that cannot retrieve anything; a reference that points at nothing, or that
  leads back to a schema it is inside of, is refused. ``$dynamicRef`` is refused, and
  ``$id`` and ``$schema`` are taken only at the root (below it they would change what a
  pointer means, or switch to a validator without the guards below).
- ``pattern`` and ``patternProperties`` run on RE2, which is linear in the input; a
  pattern RE2 cannot run (backreferences, lookaround) is refused, and so is
  ``patternProperties`` in a schema that also uses ``unevaluatedProperties`` (the library
  would run those patterns with Python's backtracking ``re``).
- The document is at most ``MAX_SCHEMA_BYTES`` of canonical JSON and ``MAX_SCHEMA_DEPTH``
  levels deep; with every reference followed, at most ``MAX_EXPANDED_SUBSCHEMAS``
  subschemas, ``MAX_EXPANDED_DEPTH`` deep. Checking one value takes at most
  ``MAX_CHECK_STEPS`` keyword evaluations.

``schema_problems`` says what is wrong at ``PUT``; ``checker_for`` runs the same checks
on a stored schema before a proposal uses it (a schema stored before these rules, or
written around the API, is then reported unusable instead of being run). No message ever
carries anything but the schema's own locations: nothing is fetched, so nothing fetched
can be echoed."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from contextlib import suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import jsonschema
import re2
import referencing
import referencing.exceptions
import referencing.jsonschema

from audit.chain import canonical_json

MAX_SCHEMA_BYTES = 16 * 1024
MAX_SCHEMA_DEPTH = 32
MAX_EXPANDED_SUBSCHEMAS = 5_000
MAX_EXPANDED_DEPTH = 64
MAX_CHECK_STEPS = 20_000

DIALECT = jsonschema.Draft202012Validator
SPECIFICATION = referencing.jsonschema.DRAFT202012

# The 2020-12 keywords whose values are subschemas: one, an array of them, an object of them.
_ONE = (
    "additionalProperties",
    "contains",
    "contentSchema",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_ARRAY = ("allOf", "anyOf", "oneOf", "prefixItems")
_OBJECT = ("$defs", "definitions", "dependentSchemas", "patternProperties", "properties")


class SchemaTooCostly(Exception):
    """Checking one value went past ``MAX_CHECK_STEPS`` keyword evaluations."""


# RE2 logs every refused pattern to stderr; the refusal is reported to the caller instead.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
_RE2_OPTIONS.never_capture = True


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> Any:
    return re2.compile(pattern, _RE2_OPTIONS)


def _search(pattern: str, text: str) -> bool:
    """RE2 reads UTF-8: a string that has none (a lone surrogate; core.inputs refuses those
    at the boundary) matches no pattern rather than raising."""
    try:
        return bool(_regex(pattern).search(text))
    except UnicodeEncodeError:
        return False


def _regex_problem(pattern: str) -> str | None:
    try:
        _regex(pattern)
    except UnicodeEncodeError:
        return "cannot run on the linear-time engine (RE2): it is not valid Unicode"
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "refused"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        return f"cannot run on the linear-time engine (RE2): {reason}"
    return None


# --- the validator: RE2 for patterns, a step budget for everything -------------------


@dataclass
class _Budget:
    left: int


_BUDGET: ContextVar[_Budget | None] = ContextVar("value_schema_budget", default=None)


def _counted(keyword: Any) -> Any:
    """Each keyword evaluation spends a step of the check under way (none outside one)."""

    def counted(validator: Any, argument: Any, instance: Any, schema: Any) -> Any:
        budget = _BUDGET.get()
        if budget is not None:
            budget.left -= 1
            if budget.left < 0:
                raise SchemaTooCostly
        return keyword(validator, argument, instance, schema)

    return counted


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Any:
    """As the library's own, with ``patternProperties`` matched on RE2 (same messages)."""
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [
        key
        for key in instance
        if key not in properties and not any(_search(p, key) for p in patterns)
    ]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        names = sorted(extras, key=str)
        if "patternProperties" in schema:
            verb = "does" if len(names) == 1 else "do"
            joined = ", ".join(repr(each) for each in names)
            listed = ", ".join(repr(each) for each in sorted(patterns))
            yield jsonschema.ValidationError(
                f"{joined} {verb} not match any of the regexes: {listed}"
            )
        else:
            verb = "was" if len(names) == 1 else "were"
            joined = ", ".join(repr(each) for each in names)
            yield jsonschema.ValidationError(
                f"Additional properties are not allowed ({joined} {verb} unexpected)"
            )


_KEYWORDS = {name: _counted(keyword) for name, keyword in DIALECT.VALIDATORS.items()}
_KEYWORDS.update(
    pattern=_counted(_pattern),
    patternProperties=_counted(_pattern_properties),
    additionalProperties=_counted(_additional_properties),
)
SafeValidator = jsonschema.validators.extend(DIALECT, validators=_KEYWORDS)


# --- what is wrong with a schema ------------------------------------------------------


def _pointer(parts: tuple[str, ...]) -> str:
    """Where in the schema, as a ``$ref`` would name it (``#``, ``#/properties/a``)."""
    return "#" + "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _too_deep(schema: Any) -> bool:
    """Nesting of objects and arrays, counted without recursion (a stored document may be
    deeper than Python's stack)."""
    stack: list[tuple[Any, int]] = [(schema, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            return True
        if isinstance(node, dict):
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)
    return False


class _Refused(Exception):
    """Stops the walk: once one reference is circular or the expansion too big, the
    sizes after it mean nothing."""


class _Walk:
    """Every subschema, every reference followed (each subschema measured once)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.root = schema
        resource = SPECIFICATION.create_resource(schema)
        # No retrieve function: anything that is not inside the schema is unresolvable.
        self.resolver = referencing.Registry().resolver_with_root(resource)
        self.problems: list[str] = []
        self.measured: dict[int, tuple[int, int]] = {}
        self.inside: set[int] = set()
        self.pattern_properties = False
        self.unevaluated_properties = False

    def schema(self, node: Any, at: tuple[str, ...], level: int = 1) -> tuple[int, int]:
        """(subschemas, depth) of ``node`` with its references followed; ``level`` is how
        deep it is reached, checked on the way down so the walk itself stays shallow."""
        if not isinstance(node, dict):
            return (1, 1)
        key = id(node)
        if key in self.inside:
            self.problems.append(
                f"$ref at {_pointer(at)} leads back into a schema it is inside of: "
                "a recursive reference is not allowed"
            )
            raise _Refused
        count, depth = self.measured.get(key, (0, 0))
        if level > MAX_EXPANDED_DEPTH or level - 1 + depth > MAX_EXPANDED_DEPTH:
            self._too_large()
        if count:
            return (count, depth)
        self.inside.add(key)
        self._keywords(node, at)
        count, depth = 1, 0
        for child, where in self._children(node, at):
            size, deep = self.schema(child, where, level + 1)
            count, depth = count + size, max(depth, deep)
        target = self._target(node.get("$ref"), at)
        if target is not None:
            size, deep = self.schema(target, (*at, "$ref"), level + 1)
            count, depth = count + size, max(depth, deep)
        self.inside.discard(key)
        if count > MAX_EXPANDED_SUBSCHEMAS:
            self._too_large()
        self.measured[key] = (count, depth + 1)
        return (count, depth + 1)

    def _too_large(self) -> None:
        self.problems.append(
            f"is too large with its references followed (at most {MAX_EXPANDED_SUBSCHEMAS} "
            f"subschemas, {MAX_EXPANDED_DEPTH} deep)"
        )
        raise _Refused

    def _children(
        self, node: dict[str, Any], at: tuple[str, ...]
    ) -> Iterator[tuple[Any, tuple[str, ...]]]:
        # Objects first, so a definition is reported at its own place, not where it is used.
        for name in _OBJECT:
            if isinstance(node.get(name), dict):
                for member, child in node[name].items():
                    yield child, (*at, name, member)
        for name in _ONE:
            if name in node:
                yield node[name], (*at, name)
        for name in _ARRAY:
            if isinstance(node.get(name), list):
                for index, child in enumerate(node[name]):
                    yield child, (*at, name, str(index))

    def _keywords(self, node: dict[str, Any], at: tuple[str, ...]) -> None:
        where = _pointer(at)
        if node is not self.root:
            for name in ("$id", "$schema"):
                if name in node:
                    self.problems.append(f"{name} is allowed only at the root, not at {where}")
        if "$dynamicRef" in node:
            self.problems.append(f"$dynamicRef at {where} is not supported; use $ref")
        if isinstance(node.get("pattern"), str):
            problem = _regex_problem(node["pattern"])
            if problem:
                self.problems.append(f"pattern at {where} {problem}")
        if isinstance(node.get("patternProperties"), dict):
            self.pattern_properties = True
            for pattern in node["patternProperties"]:
                problem = _regex_problem(pattern)
                if problem:
                    self.problems.append(f"patternProperties {pattern!r} at {where} {problem}")
        if "unevaluatedProperties" in node:
            self.unevaluated_properties = True

    def _target(self, ref: Any, at: tuple[str, ...]) -> Any:
        if ref is None:
            return None
        where = _pointer((*at, "$ref"))
        if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
            self.problems.append(
                f"$ref at {where} must be a JSON pointer inside this schema ('#' or '#/…'); "
                "a reference to another document, URL or file is not allowed"
            )
            return None
        try:
            target = self.resolver.lookup(ref).contents
        except referencing.exceptions.Unresolvable:
            self.problems.append(f"$ref at {where} points at nothing in this schema")
            return None
        if not isinstance(target, dict | bool):
            self.problems.append(f"$ref at {where} points at something that is not a schema")
            return None
        return target


def schema_problems(schema: Any) -> list[str]:
    """What keeps ``schema`` from being a field's ``value_schema`` (empty: nothing)."""
    if not isinstance(schema, dict):
        return ["must be a JSON Schema object"]
    if _too_deep(schema):
        return [f"must be at most {MAX_SCHEMA_DEPTH} levels deep"]
    if len(canonical_json(schema).encode("utf-8", "surrogatepass")) > MAX_SCHEMA_BYTES:
        return [f"must be at most {MAX_SCHEMA_BYTES} bytes of canonical JSON"]
    try:
        DIALECT.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return [f"is not a valid JSON Schema (2020-12): {exc.message}"]
    walk = _Walk(schema)
    with suppress(_Refused):
        walk.schema(schema, ())
    if walk.pattern_properties and walk.unevaluated_properties:
        walk.problems.append(
            "may not use patternProperties together with unevaluatedProperties "
            "(their patterns would not run on the linear-time engine)"
        )
    return walk.problems


# --- checking a value -----------------------------------------------------------------


@dataclass(frozen=True)
class Checker:
    """A stored schema made ready: either a validator or why it cannot be used."""

    validator: Any = None
    problems: tuple[str, ...] = ()

    def first_error(self, value: Any) -> Any:
        """The most relevant ``jsonschema.ValidationError`` (None: the value matches);
        raises ``SchemaTooCostly`` past the step budget."""
        budget = _BUDGET.set(_Budget(MAX_CHECK_STEPS))
        try:
            return jsonschema.exceptions.best_match(self.validator.iter_errors(value))
        finally:
            _BUDGET.reset(budget)


@functools.lru_cache(maxsize=128)
def _prepared(text: str) -> Checker:
    schema = json.loads(text)
    problems = schema_problems(schema)
    if problems:
        return Checker(problems=tuple(problems))
    return Checker(validator=SafeValidator(schema, registry=referencing.Registry()))


def checker_for(schema: Any) -> Checker:
    """The checker of a stored schema, kept per process by its canonical text (the walk
    and the compiled patterns are paid once, not on every proposal)."""
    if not isinstance(schema, dict):
        return Checker(problems=("must be a JSON Schema object",))
    if _too_deep(schema):
        return Checker(problems=(f"must be at most {MAX_SCHEMA_DEPTH} levels deep",))
    return _prepared(canonical_json(schema))
