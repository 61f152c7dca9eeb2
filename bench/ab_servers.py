"""One change's effect on resolve under load, measured in one run: two source trees (A,
before; B, after) each served by its own gunicorn, driven in turn by the same wrk load.

    git worktree add /tmp/memgov-before <commit>
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memgov_speed \\
    REDIS_URL=redis://127.0.0.1:6379/10 \\
        .venv/bin/python -m bench.ab_servers /tmp/memgov-before . [--rounds 4] [--seconds 5]

Both servers run this checkout's virtualenv on ``<DATABASE_URL>_100k`` (``bench.generate``'s
data, as ``bench.cache_bench`` uses it), gthread 2 workers x 4 threads, with the resolve
cache on unless ``--cache-off``. Each round drives A, then B (the probes asked once just
before, so a warm run finds its entries), then the floor on A. The median round of
each is printed with the web workers' CPU per request (``/proc``). On a noisy host
the rounds move together, so the A/B within a round means more than a figure on its own.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.cache_bench import SIZE, _size_url, load, serving, warm, workload

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(server: subprocess.Popen[bytes]) -> float:
    """User and system time of the server's worker processes so far."""
    children = subprocess.run(
        ["pgrep", "-P", str(server.pid)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    total = 0.0
    for pid in children:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # recycled meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return total


def _drive(
    base: str, server: subprocess.Popen[bytes], path: str, bodies: list[str], key: str, args: Any
) -> tuple[float, float]:
    """Requests/s, and the workers' CPU milliseconds per request."""
    before = _cpu_seconds(server)
    result = load(base, path, bodies, key, args.concurrency, args.seconds)
    if result["non_2xx"]:
        raise SystemExit(f"{path}: {result['non_2xx']} answers that were not 2xx")
    return result["rps"], (_cpu_seconds(server) - before) * 1000 / result["requests"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="source tree A")
    parser.add_argument("after", type=Path, help="source tree B")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--cache-off", action="store_true")
    args = parser.parse_args(argv)
    url = _size_url(os.environ.get("DATABASE_URL", "postgres:///memgov_bench"), SIZE)
    key, bodies, _ = workload(url)
    cache = not args.cache_off
    runs: dict[str, list[tuple[float, float]]] = {"A": [], "B": [], "floor (A)": []}
    with ExitStack() as stack:
        servers = {
            name: stack.enter_context(serving(url, cache, 4, root.resolve()))
            for name, root in (("A", args.before), ("B", args.after))
        }
        for base, _ in servers.values():
            warm(base, bodies, key)
        for _ in range(args.rounds):
            for name, (base, server) in servers.items():
                if cache:
                    warm(base, bodies, key)  # an entry lives at most a minute
                runs[name].append(_drive(base, server, "/api/v1/resolve", bodies, key, args))
            base, server = servers["A"]
            runs["floor (A)"].append(_drive(base, server, "/floor", [], key, args))
    print(
        f"resolve, cache {'on' if cache else 'off'}, {args.concurrency} clients, "
        f"{args.rounds} rounds of {args.seconds} s, load average {os.getloadavg()[0]:.2f}"
    )
    for name, results in runs.items():
        rps = [round(r) for r, _ in results]
        cpu = statistics.median(c for _, c in results)
        print(
            f"{name:10s} req/s median {statistics.median(rps):7.0f} (rounds {rps}), "
            f"web CPU {cpu:.2f} ms a request"
        )


if __name__ == "__main__":
    main()
