"""Where a benchmark's JSON report goes: ``bench/results/<name>-<date>.json``, the date
followed by a letter (``2026-12-01b``, ``c``, …) when a run of the same day is already
there, so that no run overwrites another's figures (the README cites them by name)."""

from __future__ import annotations

import string
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def report_path(name: str) -> Path:
    """A new file for today's report of ``name``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    day = datetime.now(UTC).date().isoformat()
    for suffix in ["", *string.ascii_lowercase[1:]]:
        path = RESULTS / f"{name}-{day}{suffix}.json"
        if not path.exists():
            return path
    raise SystemExit(f"bench/results has a report of {name} for every letter of {day}")
