"""Each name in config/settings.py is assigned once (issue 48, point 5): a setting
assigned again 300 lines later made its first value a lie to whoever read it there.

Read from the source with ``ast``. Two assignments on exclusive branches of one
``if``/``else`` (or ``try``/``except``) are one: only one runs. Updating part of a value
(``DATABASES["default"]["OPTIONS"] = …``, ``CELERY_BEAT_SCHEDULE["embed-missing"] = …``)
binds no name and is allowed: the setting still has one assignment that says what it
is. ``X += …`` rebinds ``X`` and counts as a second assignment."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

SETTINGS = Path(__file__).resolve().parents[2] / "config" / "settings.py"


def _bound_by_target(target: ast.expr) -> Iterable[str]:
    """Names a store target binds; ``X[k] = …`` and ``X.a = …`` bind none."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _bound_by_target(element)
    elif isinstance(target, ast.Starred):
        yield from _bound_by_target(target.value)


def _bound_by(statement: ast.stmt) -> Iterable[str]:
    """Names one statement binds at module level, nested blocks excluded."""
    if isinstance(statement, ast.Assign):
        for target in statement.targets:
            yield from _bound_by_target(target)
    elif isinstance(statement, ast.AnnAssign):
        # A bare annotation (``X: dict[str, object]``) declares, it does not assign.
        if statement.value is not None:
            yield from _bound_by_target(statement.target)
    elif isinstance(statement, ast.AugAssign):
        yield from _bound_by_target(statement.target)
    elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield statement.name
    elif isinstance(statement, ast.Import | ast.ImportFrom):
        for alias in statement.names:
            yield (alias.asname or alias.name).split(".")[0]
    elif isinstance(statement, ast.For | ast.AsyncFor):
        yield from _bound_by_target(statement.target)
    elif isinstance(statement, ast.With | ast.AsyncWith):
        for item in statement.items:
            if item.optional_vars is not None:
                yield from _bound_by_target(item.optional_vars)
    if not isinstance(statement, ast.For | ast.AsyncFor | ast.While | ast.With | ast.AsyncWith):
        yield from _bound_by_walrus(statement)


def _branches(statement: ast.stmt) -> list[list[ast.stmt]] | None:
    """The exclusive blocks of a branching statement, or None for a plain statement."""
    if isinstance(statement, ast.If):
        return [statement.body, statement.orelse]
    if isinstance(statement, ast.Try | ast.TryStar):
        return [statement.body + statement.orelse, *(h.body for h in statement.handlers)]
    return None


def assigned_more_than_once(block: list[ast.stmt]) -> tuple[set[str], set[str]]:
    """(names the block binds, names it binds twice on one path)."""
    bound: Counter[str] = Counter()
    twice: set[str] = set()
    for statement in block:
        branches = _branches(statement)
        if branches is None:
            here = list(_bound_by(statement))
            inner: list[list[ast.stmt]] = []
            if isinstance(statement, ast.For | ast.AsyncFor | ast.While):
                inner = [statement.body, statement.orelse]
            elif isinstance(statement, ast.With | ast.AsyncWith):
                inner = [statement.body]
            for body in inner:
                names, repeated = assigned_more_than_once(body)
                here.extend(names)
                twice |= repeated
            bound.update(here)
        else:
            if isinstance(statement, ast.If):
                bound.update(_bound_by_walrus(statement.test))
            if isinstance(statement, ast.Try | ast.TryStar):
                bound.update(h.name for h in statement.handlers if h.name)
                names, repeated = assigned_more_than_once(statement.finalbody)
                bound.update(names)
                twice |= repeated
            either: set[str] = set()
            for branch in branches:
                names, repeated = assigned_more_than_once(branch)
                either |= names
                twice |= repeated
            bound.update(either)
    twice |= {name for name, count in bound.items() if count > 1}
    return set(bound), twice


def _bound_by_walrus(node: ast.AST) -> Iterable[str]:
    for inner in ast.walk(node):
        if isinstance(inner, ast.NamedExpr):
            yield inner.target.id


def _twice(source: str) -> set[str]:
    return assigned_more_than_once(ast.parse(source).body)[1]


def test_each_name_in_settings_is_assigned_once() -> None:
    assert _twice(SETTINGS.read_text(encoding="utf-8")) == set()


@pytest.mark.parametrize(
    ("source", "twice"),
    [
        ("A = 1\nB = 2\n", set()),
        ("A = 1\nA = 2\n", {"A"}),
        ("A = [1]\nif x:\n    A = [2]\n", {"A"}),
        ("if x:\n    A = 1\nelse:\n    A = 2\n", set()),
        ("try:\n    A = 1\nexcept E:\n    A = 2\n", set()),
        ("A = {}\nA['k'] = 1\nif x:\n    A['j'] = 2\n", set()),
        ("A = []\nA += [1]\n", {"A"}),
        ("A: dict[str, int]\nif x:\n    A = {}\nelse:\n    A = {'k': 1}\n", set()),
        ("A, B = 1, 2\nB = 3\n", {"B"}),
        ("for A in x:\n    pass\nA = 1\n", {"A"}),
        ("def f():\n    A = 1\n    A = 2\n", set()),
    ],
)
def test_what_counts_as_assigned_twice(source: str, twice: set[str]) -> None:
    assert _twice(source) == twice
