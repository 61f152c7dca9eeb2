"""psycopg keeps a cursor's adapters only while it executes the very query object it ran
before (issue 14): every resolve of one shape must hand it one statement text, not an
equal copy written out afresh."""

from __future__ import annotations

from datetime import UTC, datetime

from core.sql import one_text
from memory.candidates import CandidateRequest, candidate_sql

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def _request(subject: str, **overrides: object) -> CandidateRequest:
    shape: dict[str, object] = {
        "tenant_id": 1,
        "subject_id": subject,
        "fields": None,
        "context": {"task": f"task-of-{subject}"},
        "known_at": NOW,
        "with_policy": True,
    }
    shape.update(overrides)
    return CandidateRequest(**shape)  # type: ignore[arg-type]


def test_equal_texts_are_one_object() -> None:
    first = "".join(["SELECT ", "1"])
    again = "".join(["SELECT ", "1"])
    assert first == again and first is not again
    assert one_text(first) is one_text(again) is first


def test_resolves_of_one_shape_run_one_statement_text() -> None:
    sql_a, params_a = candidate_sql(_request("ent_a"))
    sql_b, params_b = candidate_sql(_request("ent_b", context={"project": "P-9"}))
    assert sql_a is sql_b
    assert params_a != params_b  # what differs is bound, not written into the text


def test_another_shape_is_another_statement() -> None:
    plain, _ = candidate_sql(_request("ent_a"))
    narrowed, _ = candidate_sql(_request("ent_a", fields=("phone", "delivery_window")))
    assert narrowed != plain
    assert candidate_sql(_request("ent_b", fields=("email", "phone")))[0] is narrowed
