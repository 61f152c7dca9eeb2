"""What the in-process, one-client benchmarks (``bench.search_bench``,
``bench.context_bench``) share: their database, a closed loop over a workload of
(kind, input) pairs, the p50/p95/p99 of each kind and over all, and the report."""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from bench.reports import report_path

Workload = list[tuple[str, dict[str, Any]]]


def arguments(doc: str, argv: list[str] | None) -> tuple[argparse.Namespace, str]:
    """The command line every one-client benchmark takes, and the database URL it names:
    ``<DATABASE_URL>_<size>`` or ``--database-url``."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--size", default="1m", help="10k, 100k or 1m (the database suffix)")
    parser.add_argument("--database-url", help="this database instead of <DATABASE_URL>_<size>")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=35)
    args = parser.parse_args(argv)
    base = urlsplit(
        os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memgov_bench")
    )
    url = args.database_url or base._replace(path=f"{base.path}_{args.size}").geturl()
    return args, url


def setup(url: str) -> None:
    """Django on that database, its migrations applied, the resolution cache off: every
    call reads the database, the worst case."""
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
    os.environ["MEMGOV_RESOLVE_CACHE"] = "false"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def spread(samples: Sequence[float]) -> dict[str, Any]:
    ordered = sorted(samples)
    cut = statistics.quantiles(ordered, n=100, method="inclusive") if len(ordered) > 1 else []

    def at(p: int) -> float:
        return round(cut[p - 1] if cut else ordered[0], 2)

    return {"n": len(ordered), "p50_ms": at(50), "p95_ms": at(95), "p99_ms": at(99)}


Samples = dict[str, list[float]]
Sizes = dict[str, list[int]]


def warm(call: Callable[[dict[str, Any]], Any], queries: Workload) -> None:
    """The first 20 queries, untimed: the connection, the plans and the caches."""
    for _kind, data in queries[:20]:
        call(data)


def timed(
    call: Callable[[dict[str, Any]], Any],
    queries: Workload,
    seconds: float,
    size_of: Callable[[Any], int],
    *,
    start: int = 0,
) -> tuple[Samples, Sizes, int]:
    """Each query in turn from ``start``, one at a time, for ``seconds``: milliseconds
    and answer sizes per kind, and where the next run goes on."""
    by_kind: Samples = {}
    sizes: Sizes = {}
    deadline = time.monotonic() + seconds
    i = start
    while time.monotonic() < deadline:
        kind, data = queries[i % len(queries)]
        i += 1
        started = time.perf_counter()
        answer = call(data)
        by_kind.setdefault(kind, []).append((time.perf_counter() - started) * 1000)
        sizes.setdefault(kind, []).append(size_of(answer))
    return by_kind, sizes, i


def summary(
    by_kind: Samples, sizes: Sizes, size_name: str, target_ms: float | None = None
) -> dict[str, Any]:
    """The spread per kind and over all, the mean answer size, and the target's verdict."""
    overall = spread([ms for samples in by_kind.values() for ms in samples])
    summarized: dict[str, Any] = {
        "overall": overall,
        "kinds": {
            kind: {**spread(samples), size_name: round(statistics.mean(sizes[kind]), 1)}
            for kind, samples in by_kind.items()
        },
    }
    if target_ms is not None:
        summarized["target"] = {
            "p95_ms_at_most": target_ms,
            "measured_p95_ms": overall["p95_ms"],
            "met": overall["p95_ms"] <= target_ms,
        }
    return summarized


def closed_loop(
    call: Callable[[dict[str, Any]], Any],
    queries: Workload,
    seconds: float,
    size_of: Callable[[Any], int],
    size_name: str,
    target_ms: float,
) -> dict[str, Any]:
    """Each query in turn, one at a time, for ``seconds`` (after 20 to warm the connection,
    the plans and the caches): the spread per kind, the mean ``size_of`` each answer."""
    warm(call, queries)
    by_kind, sizes, _ = timed(call, queries, seconds, size_of)
    return summary(by_kind, sizes, size_name, target_ms)


def report(
    name: str,
    args: argparse.Namespace,
    url: str,
    argv: list[str] | None,
    run: Callable[[], dict[str, Any]],
    **described: Any,
) -> None:
    """Run, print the table and write ``bench/results/<name>-<date>.json``."""
    load_before = os.getloadavg()
    result = run()
    module = f"bench.{name}_bench"
    written = {
        "benchmark": name,
        "command": " ".join([sys.executable, "-m", module, *(argv or sys.argv[1:])]),
        "database": urlsplit(url).path.lstrip("/"),
        "size": None if args.database_url else args.size,
        "seconds": args.seconds,
        **described,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()],
        },
        **result,
    }
    print(f"{name}, 1 client, {written['database']}, {args.seconds:g} s, cache off")
    for kind, line in [("all", result["overall"]), *result["kinds"].items()]:
        print(
            f"  {kind:<22} n={line['n']:<6} p50 {line['p50_ms']:>7} ms  "
            f"p95 {line['p95_ms']:>7} ms  p99 {line['p99_ms']:>7} ms"
        )
    baseline = result.get("baseline")
    if baseline:
        print(f"  baseline, same run: {baseline['name']} (p95 with / without)")
        for kind, ratio in [("all", baseline["p95_ratio"]), *baseline["kinds"].items()]:
            line = baseline["overall"] if kind == "all" else baseline["spread"][kind]
            print(f"  {kind:<22} p95 {line['p95_ms']:>7} ms  ratio {ratio:>5}")
    target = result["target"]
    verdict = "met" if target["met"] else "missed"
    print(f"  target p95 ≤ {target['p95_ms_at_most']:g} ms: {verdict}")
    out = report_path(name)
    out.write_text(json.dumps(written, indent=2, ensure_ascii=False) + "\n")
    print(f"({out})")
