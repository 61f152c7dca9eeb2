"""Where a benchmark's JSON report goes: ``bench/results/<name>-<date>.json``, the date
followed by a letter (``2026-12-01b``, ``c``, …) when a run of the same day is already
there, so that no run overwrites another's figures (the README cites them by name). And
the cold targets' ratios as read from a resolve report (``resolve_bench`` and
``run_all`` judge by the same)."""

from __future__ import annotations

import string
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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


def p50_over_floor(http: dict[str, Any]) -> float:
    """The one-client target's ratio: the median pair's, or (a report from before pairs)
    the ratio of the medians."""
    paired = http.get("paired")
    if paired:
        return float(paired["p50_ratio"])
    return float(http["resolve"]["p50_ms"] / max(http["floor"]["p50_ms"], 1e-9))


def rps_over_floor(http: dict[str, Any]) -> float:
    """The eight-client target's ratio, as ``p50_over_floor`` takes it."""
    paired = http.get("paired")
    if paired:
        return float(paired["rps_ratio"])
    return float(http["resolve"]["rps"] / max(http["floor"]["rps"], 1e-9))
