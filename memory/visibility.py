"""Visibility labels as SQL, so a list never reads the rows its caller may not see.

A version's ``required_visibility`` is a list of label sets; a caller sees it when every
set holds ``*`` or one of the caller's labels (``core.principals.can_see``). Testing that
in Python after the query made a listing's time grow with the hidden rows it skipped, which
told a reader how many there were (issue 42). Here the same rule is one ``NOT EXISTS`` over
the JSON array, in PostgreSQL's or SQLite's own JSON functions, so hidden rows are dropped
by the database before paging, ordering or counting."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db.models import BooleanField, Expression, F
from django.db.models.sql.compiler import SQLCompiler

from core.principals import Principal


def allowed_labels(labels: Iterable[str]) -> list[str]:
    """The caller's labels and ``*``: a label set is satisfied by either."""
    return sorted({*labels, "*"})


def visible_sql(column: str, labels: Iterable[str], vendor: str) -> tuple[str, list[Any]]:
    """The condition "the caller sees ``column``" (a JSON list of label sets) as SQL with
    its parameters; ``column`` is SQL the caller built (a quoted, aliased column)."""
    allowed = allowed_labels(labels)
    if vendor == "postgresql":
        sql = (
            f"NOT EXISTS (SELECT 1 FROM jsonb_array_elements({column}) required_set "  # noqa: S608 - a compiled column, bound values
            "WHERE NOT (required_set.value ?| %s::text[]))"
        )
        return sql, [allowed]
    marks = ", ".join(["%s"] * len(allowed))
    sql = (
        f"NOT EXISTS (SELECT 1 FROM json_each({column}) required_set WHERE NOT EXISTS "  # noqa: S608 - a compiled column, bound values
        f"(SELECT 1 FROM json_each(required_set.value) label WHERE label.value IN ({marks})))"
    )
    return sql, allowed


class VisibleTo(Expression):
    """``queryset.filter(VisibleTo(principal))``: the rows whose label sets the principal
    satisfies. Compiles the column through Django, so table aliases in joins and
    subqueries stay right."""

    output_field = BooleanField()
    conditional = True

    def __init__(self, principal: Principal, column: str = "required_visibility") -> None:
        super().__init__()
        self.labels = tuple(sorted(principal.labels))
        self.column: Any = F(column)  # a column reference once resolved

    def get_source_expressions(self) -> list[Any]:
        return [self.column]

    def set_source_expressions(self, exprs: Sequence[Any]) -> None:
        (self.column,) = exprs

    def as_sql(self, compiler: SQLCompiler, connection: Any) -> tuple[str, tuple[Any, ...]]:
        column, column_params = compiler.compile(self.column)
        sql, params = visible_sql(column, self.labels, connection.vendor)
        return sql, (*column_params, *params)
