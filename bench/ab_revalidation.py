"""One change's effect on revalidation, measured in one run: ``bench.revalidation_bench`` of
two source trees (A, before; B, after) in turn, rounds interleaved, each with its own real
Celery worker on a fresh copy of the same data.

    git worktree add /tmp/memgov-before <commit>
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memgov_speed \\
    REDIS_URL=redis://127.0.0.1:6379/10 \\
        .venv/bin/python -m bench.ab_revalidation /tmp/memgov-before . [--rounds 3]

Both trees run this checkout's virtualenv. Each round's items/s and gate-check p95 are
printed for A and B, then the medians and in how many rounds B was ahead: on a host whose
speed moves within minutes, the pairs say more than any one figure. The rounds' own
reports are folded into ``bench/results/ab-revalidation-<date>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.reports import report_path


def _round(tree: Path, sample: int) -> dict[str, Any]:
    """One run of the tree's own revalidation benchmark; its report file is removed (it is
    kept in this run's report instead)."""
    results = tree / "bench" / "results"
    before = set(results.glob("revalidation-*.json"))
    done = subprocess.run(
        [sys.executable, "-m", "bench.revalidation_bench", "--sample", str(sample)],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"revalidation_bench in {tree} failed:\n{done.stderr[-2000:]}")
    for made in set(results.glob("revalidation-*.json")) - before:
        made.unlink()
    report: dict[str, Any] = json.loads(done.stdout[done.stdout.index("\n{") + 1 :])
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="source tree A")
    parser.add_argument("after", type=Path, help="source tree B")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sample", type=int, default=30, help="items timed for gate checks")
    args = parser.parse_args(argv)
    trees = {"A": args.before.resolve(), "B": args.after.resolve()}
    rounds: list[dict[str, Any]] = []
    for number in range(1, args.rounds + 1):
        found = {name: _round(tree, args.sample) for name, tree in trees.items()}
        rounds.append(found)
        print(
            f"round {number}: "
            + "   ".join(
                f"{name} {r['revalidation']['items_per_second']:6.1f} items/s, gate p95 "
                f"{r['gate_checks_one_item']['p95_ms']:5.1f} ms"
                for name, r in found.items()
            ),
            flush=True,
        )
    rates = {name: [r[name]["revalidation"]["items_per_second"] for r in rounds] for name in trees}
    ahead = sum(1 for a, b in zip(rates["A"], rates["B"], strict=True) if b > a)
    summary = {
        "A_items_per_second_median": statistics.median(rates["A"]),
        "B_items_per_second_median": statistics.median(rates["B"]),
        "B_ahead_in_rounds": f"{ahead} of {len(rounds)}",
    }
    print(
        f"median items/s: A {summary['A_items_per_second_median']:.1f}, "
        f"B {summary['B_items_per_second_median']:.1f}; B ahead in {summary['B_ahead_in_rounds']}"
        f" rounds (load average {os.getloadavg()[0]:.2f})"
    )
    path = report_path("ab-revalidation")
    report = {
        "benchmark": "ab-revalidation",
        "command": " ".join([".venv/bin/python -m bench.ab_revalidation", *sys.argv[1:]]),
        "at": datetime.now(UTC).isoformat(),
        "trees": {name: str(tree) for name, tree in trees.items()},
        "summary": summary,
        "rounds": rounds,
    }
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
