"""``make bench``: every benchmark in turn, each in its own process (each reads
DATABASE_URL / REDIS_URL itself and writes its own ``bench/results/`` file), then issue
14's targets with the measured ratio and "met" or "missed", printed and written to
``bench/results/targets-<date>.json``.

``BENCH_QUICK=1`` runs a shorter version (sizes 10k and 100k, one round, fewer items:
about five minutes on two idle cores, plus generating the data the first time); the
default is the full run (10k, 100k and 1M versions, three rounds: about fifteen minutes,
plus four to generate 1M versions the first time).

Speed figures are ratios measured in one run on the same machine: each line shows the
load average of the benchmark it comes from, since other work on the machine moves them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.reports import RESULTS, p50_over_floor, report_path, rps_over_floor

BENCH = Path(__file__).resolve().parent
QUICK = os.environ.get("BENCH_QUICK", "").lower() in ("1", "true", "yes")
BASE = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memgov_bench")


def _approvals_url() -> str:
    parts = urlsplit(BASE)
    return parts._replace(path=f"{parts.path}_approvals").geturl()


STEPS: list[tuple[str, list[str], dict[str, str]]] = [
    (
        "resolve",
        ["--sizes", "10k,100k", "--rounds", "1", "--duration", "4"] if QUICK else ["--rounds", "3"],
        {},
    ),
    (
        "cache",
        ["--concurrency", "16"]  # the web role as deployed (bench.cache_bench.serving)
        + (["--rounds", "1", "--seconds", "5"] if QUICK else ["--rounds", "3"]),
        {},
    ),
    (
        "revalidation",
        ["--size", "100k", "--sample", "30" if QUICK else "100"],
        {},
    ),
    (
        "search",
        ["--size", "100k", "--seconds", "5"] if QUICK else ["--size", "1m", "--seconds", "20"],
        {},
    ),
    (
        "context",
        ["--size", "100k", "--seconds", "5"] if QUICK else ["--size", "1m", "--seconds", "20"],
        {},
    ),
    (
        "approval-latency",
        ["--items", "20" if QUICK else "50"],
        {"DATABASE_URL": _approvals_url()},
    ),
]
MODULES = {
    "resolve": "bench.resolve_bench",
    "cache": "bench.cache_bench",
    "revalidation": "bench.revalidation_bench",
    "approval-latency": "bench.approval_latency",
    "context": "bench.context_bench",
    "search": "bench.search_bench",
}


def _newest(prefix: str, since: float) -> dict[str, Any] | None:
    found = [p for p in RESULTS.glob(f"{prefix}-*.json") if p.stat().st_mtime >= since]
    if not found:
        return None
    report: dict[str, Any] = json.loads(max(found, key=lambda p: p.stat().st_mtime).read_text())
    return report


def _line(
    name: str, value: float | None, target: float, *, at_most: bool, unit: str, load: Any
) -> dict[str, Any]:
    met = value is not None and (value <= target if at_most else value >= target)
    return {
        "target": name,
        "measured": value,
        "wanted": f"{'≤' if at_most else '≥'} {target:g}{unit}",
        "met": met,
        "load_average": load,
    }


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b else None


def targets(results: dict[str, dict[str, Any] | None]) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    resolve = results.get("resolve")
    if resolve:
        sizes = resolve["sizes"]
        for size, data in sizes.items():
            load = round(max(r["load_average"] for r in data["rounds"]), 1)
            c1, c8 = data["http"]["c1"], data["http"]["c8"]
            lines.append(
                _line(
                    f"cold resolve p50 / floor p50, 1 client, {size}",
                    round(p50_over_floor(c1), 2),
                    3.0,
                    at_most=True,
                    unit="x",
                    load=load,
                )
            )
            lines.append(
                _line(
                    f"cold resolve req/s / floor req/s, 8 clients, {size}",
                    round(rps_over_floor(c8), 2),
                    0.25,
                    at_most=False,
                    unit="x",
                    load=load,
                )
            )
            paired_c1, paired_c8 = c1.get("paired", {}), c8.get("paired", {})
            if "p50_ratio_governed" in paired_c1:
                lines.append(
                    _line(
                        f"cold resolve p50 / governed floor p50, 1 client, {size}",
                        round(paired_c1["p50_ratio_governed"], 2),
                        2.0,
                        at_most=True,
                        unit="x",
                        load=load,
                    )
                )
            if "rps_ratio_governed" in paired_c8:
                lines.append(
                    _line(
                        f"cold resolve req/s / governed floor req/s, 8 clients, {size}",
                        round(paired_c8["rps_ratio_governed"], 2),
                        0.5,
                        at_most=False,
                        unit="x",
                        load=load,
                    )
                )
        small, large = next(iter(sizes)), list(sizes)[-1]
        for clients in ("c1", "c8"):
            lines.append(
                _line(
                    f"cold resolve p95 {large} / p95 {small}, {clients[1:]} client(s)",
                    _ratio(
                        sizes[large]["http"][clients]["resolve"]["p95_ms"],
                        sizes[small]["http"][clients]["resolve"]["p95_ms"],
                    ),
                    1.5,
                    at_most=True,
                    unit="x",
                    load=None,
                )
            )
    cache = results.get("cache")
    if cache:
        runs = {(r["case"], r["concurrency"]): r for r in cache["runs"]}
        floor, warm = runs.get(("floor", 16)), runs.get(("resolve_warm", 16))
        load = cache["load_average_before_after"]
        paired = cache.get("paired", {}).get("16")  # each round's ratio, then their median
        if floor and warm:
            lines.append(
                _line(
                    "warm resolve req/s / floor req/s, 16 clients",
                    round(paired["warm_over_floor"], 2)
                    if paired
                    else _ratio(warm["rps"], floor["rps"]),
                    0.5,
                    at_most=False,
                    unit="x",
                    load=load,
                )
            )
            if paired and "warm_over_governed" in paired:
                lines.append(
                    _line(
                        "warm resolve req/s / governed floor req/s, 16 clients",
                        round(paired["warm_over_governed"], 2),
                        0.8,
                        at_most=False,
                        unit="x",
                        load=load,
                    )
                )
            lines.append(
                _line(
                    "warm resolve p99 / floor p99, 16 clients",
                    round(paired["warm_p99_over_floor_p99"], 2)
                    if paired
                    else _ratio(warm["p99_ms"], floor["p99_ms"]),
                    5.0,
                    at_most=True,
                    unit="x",
                    load=load,
                )
            )
        bumps = cache["invalidation"]
        few, many = bumps[min(bumps, key=int)], bumps[max(bumps, key=int)]
        lines.append(
            _line(
                f"retire → invisible: bump with {max(bumps, key=int)} entries / with "
                f"{min(bumps, key=int)} (O(1))",
                _ratio(many["bump_median_us"], few["bump_median_us"]),
                2.0,
                at_most=True,
                unit="x",
                load=load,
            )
        )
    revalidation = results.get("revalidation")
    if revalidation:
        load = revalidation["machine"]["load_after"][0]
        found = revalidation["revalidation"]
        gate = revalidation["gate_checks_one_item"]
        lines += [
            _line(
                f"revalidation items/s ({found['items']} active items, real worker)",
                found["items_per_second"],
                300,
                at_most=False,
                unit="",
                load=load,
            ),
            _line(
                "tenant with 100,000 active items revalidated, seconds (at that rate)",
                found["tenant_100k_seconds"],
                600,
                at_most=True,
                unit=" s",
                load=load,
            ),
            _line(
                "gate checks of one item, p95 ms",
                gate["p95_ms"],
                100,
                at_most=True,
                unit=" ms",
                load=load,
            ),
        ]
    search = results.get("search")
    if search:
        lines.append(
            _line(
                f"search p95 ms, 1 client, {search['size'] or search['database']}",
                search["overall"]["p95_ms"],
                search["target"]["p95_ms_at_most"],
                at_most=True,
                unit=" ms",
                load=round(search["machine"]["load_after"][0], 1),
            )
        )
    context = results.get("context")
    if context:
        lines.append(
            _line(
                f"context block p95 ms, 1 client, {context['size'] or context['database']}",
                context["overall"]["p95_ms"],
                context["target"]["p95_ms_at_most"],
                at_most=True,
                unit=" ms",
                load=round(context["machine"]["load_after"][0], 1),
            )
        )
    approvals = results.get("approval-latency")
    if approvals:
        lines.append(
            _line(
                "approve → active p95 ms (real worker)",
                approvals["last_approval_to_active_ms"]["p95"],
                500,
                at_most=True,
                unit=" ms",
                load=round(approvals["machine"]["load_after"][0], 1),
            )
        )
    return lines


def main() -> None:
    """``--report``: no benchmark runs; the targets are computed from the newest results
    of each benchmark already in ``bench/results/`` (after re-running one of them)."""
    started = time.time()
    failed = []
    results: dict[str, dict[str, Any] | None] = {}
    report_only = "--report" in sys.argv[1:]
    for name, args, env in [] if report_only else STEPS:
        print(f"== {name} ({'quick' if QUICK else 'full'})", flush=True)
        since = time.time()
        done = subprocess.run(
            [sys.executable, "-m", MODULES[name], *args],
            cwd=BENCH.parent,
            env={**os.environ, **env},
            check=False,
        )
        if done.returncode:
            failed.append(name)
        results[name] = _newest(name, since)
    if report_only:
        results = {name: _newest(name, 0) for name, _, _ in STEPS}
    lines = targets(results)
    print("\n== issue 14 targets" + (" (quick run)" if QUICK else ""))
    for line in lines:
        verdict = "met" if line["met"] else "missed"
        load = f"  (load {line['load_average']})" if line["load_average"] is not None else ""
        print(f"{verdict:>6}  {line['target']}: {line['measured']} (wanted {line['wanted']}){load}")
    print("        zero correctness change: the test suite (CI), not measured here")
    report = {
        "at": datetime.now(UTC).isoformat(),
        "quick": QUICK,
        "seconds": round(time.time() - started),
        "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "targets": lines,
        "failed_benchmarks": failed,
    }
    out = report_path("targets")
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(f"({report['seconds']} s; {out.relative_to(BENCH.parent)})")
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
