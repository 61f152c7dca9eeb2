"""A candidate row becomes a frozen ``resolver.Candidate`` without the dataclass's
``__init__`` (issue 14: ``memory.candidates._Draft``): the result must be the very value
``Candidate(...)`` would have built, every field set, and as frozen as any other."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory.candidates import _Row, to_candidate
from memory.resolver import Candidate

KNOWN_AT = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def _row(**overrides: Any) -> _Row:
    columns: dict[str, Any] = {
        "id": 41,
        "item_id": "mem_dana_window",
        "number": 2,
        "kind": "task_fact",
        "field": "delivery_window",
        "statement": "Dana takes deliveries in the morning.",
        "verification": "confirmed",
        "assertion": "state",
        "valid_from": KNOWN_AT - timedelta(days=3),
        "valid_to": None,
        "expires_at": KNOWN_AT + timedelta(days=30),
        "activated_at": KNOWN_AT - timedelta(days=2),
        "deactivated_at": None,
        "value": {"from": "08:00", "to": "12:00"},
        "scope": {"task": "order-1"},
        "source_ids": ["src_a", "src_b"],
        "basis": {"quote": "mornings, please"},
        "required_visibility": [["support"], ["*"]],
        "pending": 0,
    }
    columns.update(overrides)
    return _Row(**columns)


def _built_by_init(row: _Row, activated_at: Any, deactivated_at: Any) -> Candidate:
    return Candidate(
        memory_id=row.item_id,
        version=row.number,
        kind=row.kind,
        field=row.field,
        value=row.value,
        statement=row.statement,
        scope=row.scope,
        verification=row.verification,
        assertion=row.assertion,
        valid_from=row.valid_from,
        valid_to=row.valid_to,
        expires_at=row.expires_at,
        activated_at=activated_at,
        deactivated_at=deactivated_at,
        source_ids=tuple(row.source_ids),
        basis=row.basis,
        visibility=tuple(map(frozenset, row.required_visibility)),
        pending_correction=bool(row.pending),
    )


def test_a_row_becomes_the_candidate_its_init_would_build() -> None:
    row = _row(pending=1)
    candidate = to_candidate(row, KNOWN_AT, include=None)
    assert type(candidate) is Candidate
    # asdict reads every field: one left unset by to_candidate would raise here.
    assert dataclasses.asdict(candidate) == dataclasses.asdict(
        _built_by_init(row, row.activated_at, row.deactivated_at)
    )
    assert candidate == _built_by_init(row, row.activated_at, row.deactivated_at)
    assert candidate.visibility == (frozenset({"support"}), frozenset({"*"}))
    assert candidate.pending_correction is True


def test_the_version_under_check_counts_as_activated_just_before_known_at() -> None:
    row = _row(activated_at=None, deactivated_at=KNOWN_AT - timedelta(days=1))
    candidate = to_candidate(row, KNOWN_AT, include=row.id)
    assert candidate.activated_at == KNOWN_AT - timedelta(microseconds=1)
    assert candidate.deactivated_at is None
    assert candidate == _built_by_init(row, KNOWN_AT - timedelta(microseconds=1), None)
    assert to_candidate(row, KNOWN_AT, include=row.id + 1).activated_at is None


def test_a_candidate_from_a_row_is_as_frozen_as_any_other() -> None:
    candidate = to_candidate(_row(), KNOWN_AT, include=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        candidate.value = "evenings"  # type: ignore[misc]
    moved = dataclasses.replace(candidate, assertion="plan", valid_from=None)
    assert type(moved) is Candidate
    assert (moved.assertion, moved.valid_from, moved.value) == ("plan", None, candidate.value)
