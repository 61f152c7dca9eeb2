"""One change's effect on resolve under load, measured in one run: two source trees (A,
before; B, after) each served by its own gunicorn, driven in turn by the same wrk load.

    git worktree add /tmp/memgov-before <commit>
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memgov_speed \\
    REDIS_URL=redis://127.0.0.1:6379/10 \\
        .venv/bin/python -m bench.ab_servers /tmp/memgov-before . [--rounds 4] [--seconds 5]

Both servers run this checkout's virtualenv on ``<DATABASE_URL>_100k``
(``bench.generate``'s data, as ``bench.cache_bench`` uses it), as deployed
(``deploy/gunicorn.conf.py``: gthread workers on ``config.wsgi``), 2 workers, with the
resolve cache on unless ``--cache-off``. Each round drives each tree's floor and then its
resolve (the probes asked once just before, so a warm run finds its entries), A first in
odd rounds and B first in even ones. The median round of each is printed with the CPU per
request (``/proc``) of the web workers, and of PostgreSQL and Redis (every process of each
on this machine: run nothing else on them), the web workers' involuntary context switches
per request, and each tree's resolve/floor: the median of its rounds' own ratios, as
``bench.cache_bench`` judges the warm target. On a noisy host the rounds move together, so
the A/B within a round means more than a figure on its own.
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
    return _cpu_of(_pgrep("-P", str(server.pid)))


def _services_cpu_seconds() -> dict[str, float]:
    """User and system time so far of this machine's PostgreSQL and Redis processes (every
    backend, the servers' own helpers included): what a request costs beyond the web
    workers."""
    return {
        label: _cpu_of(_pgrep("-x", name))
        for label, name in (("PostgreSQL", "postgres"), ("Redis", "redis-server"))
    }


def _pgrep(*criteria: str) -> list[str]:
    return subprocess.run(
        ["pgrep", *criteria], capture_output=True, text=True, check=False
    ).stdout.split()


def _cpu_of(pids: list[str]) -> float:
    total = 0.0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # recycled meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return total


def _involuntary_switches(server: subprocess.Popen[bytes]) -> int:
    """Times the kernel has taken a CPU from a thread of the server's workers so far."""
    total = 0
    for pid in _pgrep("-P", str(server.pid)):
        for status in Path(f"/proc/{pid}/task").glob("*/status"):
            try:
                lines = status.read_text().splitlines()
            except OSError:  # a thread that ended meanwhile
                continue
            total += sum(
                int(line.split()[1]) for line in lines if line.startswith("nonvoluntary_ctxt")
            )
    return total


def _drive(
    base: str, server: subprocess.Popen[bytes], path: str, bodies: list[str], key: str, args: Any
) -> tuple[float, dict[str, float], float]:
    """Requests/s, and per request the CPU milliseconds of the web workers, PostgreSQL and
    Redis, and the web workers' involuntary context switches."""
    before, services = _cpu_seconds(server), _services_cpu_seconds()
    switches = _involuntary_switches(server)
    result = load(base, path, bodies, key, args.concurrency, args.seconds)
    if result["non_2xx"]:
        raise SystemExit(f"{path}: {result['non_2xx']} answers that were not 2xx")
    count = result["requests"]
    spent = {"web": (_cpu_seconds(server) - before) * 1000 / count}
    for label, seconds in _services_cpu_seconds().items():
        spent[label] = (seconds - services[label]) * 1000 / count
    return result["rps"], spent, (_involuntary_switches(server) - switches) / count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="source tree A")
    parser.add_argument("after", type=Path, help="source tree B")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--cache-off", action="store_true")
    parser.add_argument("--threads", type=int, help="per worker (default: as deployed)")
    args = parser.parse_args(argv)
    url = _size_url(os.environ.get("DATABASE_URL", "postgres:///memgov_bench"), SIZE)
    key, bodies, _ = workload(url)
    cache = not args.cache_off
    runs: dict[str, list[tuple[float, dict[str, float], float]]] = {
        name: [] for name in ("A", "B", "floor (A)", "floor (B)")
    }
    with ExitStack() as stack:
        servers = {
            name: stack.enter_context(serving(url, cache, args.threads, root.resolve()))
            for name, root in (("A", args.before), ("B", args.after))
        }
        for base, _ in servers.values():
            warm(base, bodies, key)
        for number in range(args.rounds):
            for name in ("A", "B") if number % 2 == 0 else ("B", "A"):
                base, server = servers[name]
                runs[f"floor ({name})"].append(_drive(base, server, "/floor", [], key, args))
                if cache:
                    warm(base, bodies, key)  # an entry lives at most a minute
                runs[name].append(_drive(base, server, "/api/v1/resolve", bodies, key, args))
    print(
        f"resolve, gthread 2 workers x {args.threads or 'deployed'} threads, "
        f"cache {'on' if cache else 'off'}, {args.concurrency} clients, "
        f"{args.rounds} rounds of {args.seconds} s, load average {os.getloadavg()[0]:.2f}"
    )
    for name, results in runs.items():
        rps = [round(r) for r, _, _ in results]
        cpu = {part: statistics.median(c[part] for _, c, _ in results) for part in results[0][1]}
        switches = statistics.median(s for _, _, s in results)
        print(
            f"{name:10s} req/s median {statistics.median(rps):7.0f} (rounds {rps}), CPU ms a "
            f"request (median): "
            + ", ".join(f"{part} {ms:.3f}" for part, ms in cpu.items())
            + f"; involuntary switches a request {switches:.2f}"
        )
    for name in ("A", "B"):
        ratios = [
            round(rps / floor, 3)
            for (rps, _, _), (floor, _, _) in zip(runs[name], runs[f"floor ({name})"], strict=True)
        ]
        print(f"{name} resolve/floor median {statistics.median(ratios):.3f} (rounds {ratios})")


if __name__ == "__main__":
    main()
