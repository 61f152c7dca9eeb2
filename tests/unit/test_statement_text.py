"""psycopg prepares a statement by its text (``prepare_threshold``, config/settings.py):
every resolve of one shape must run one text, its values bound rather than written in."""

from __future__ import annotations

from datetime import UTC, datetime

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


def test_resolves_of_one_shape_run_one_statement_text() -> None:
    sql_a, params_a = candidate_sql(_request("ent_a"))
    sql_b, params_b = candidate_sql(_request("ent_b", context={"project": "P-9"}))
    assert sql_a == sql_b
    assert params_a != params_b  # what differs is bound, not written into the text


def test_another_shape_is_another_statement() -> None:
    plain, _ = candidate_sql(_request("ent_a"))
    narrowed, _ = candidate_sql(_request("ent_a", fields=("phone", "delivery_window")))
    assert narrowed != plain
    assert candidate_sql(_request("ent_b", fields=("email", "phone")))[0] == narrowed
