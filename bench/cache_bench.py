"""Resolution cache benchmark: resolve with a warm cache, with the cache off, the bare
JSON ``/floor`` and ``/floor/checks`` (the governed floor: the key read and the one Redis
round trip of a cached resolve's checks, the most a warm resolve can reach; each round's
warm resolve over it is kept, ``warm_over_governed``), at several concurrencies; and the
cost of an invalidation with 10 vs. 10,000 cached entries under one subject.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memgov_bench \\
    REDIS_URL=redis://127.0.0.1:6379/0 .venv/bin/python -m bench.cache_bench

The data is ``bench.generate``'s (``<DATABASE_URL>_100k``, shared with the resolve
benchmark, generated when missing). Two web roles as deployed (gunicorn's gthread workers
on ``config.wsgi``), 2 workers each, run side by side, one with the cache and one without
(only one is driven at a time); ``wrk`` (Debian package ``wrk``) drives them over
loopback, rounds interleaved, the median round reported. Results go to
``bench/results/cache-<date>.json`` and a table is printed. Targets: warm resolve >= 0.7x
the floor's throughput, warm >= 3x cold, bump time independent of the number of entries.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.reports import report_path

ROOT = Path(__file__).resolve().parent.parent
SIZE, VERSIONS = "100k", 100_000
TARGETS = {"warm_over_floor": 0.7, "warm_over_cold": 3.0}
# One agent, as in production; its throttle bucket is counted but never answers 429.
THROTTLE_RATE = "100000000/min"


def _size_url(base: str, size: str) -> str:
    parts = urlsplit(base)
    return parts._replace(path=f"{parts.path}_{size}").geturl()


def workload(url: str) -> tuple[str, list[str], list[dict[str, Any]]]:
    """A fresh agent key, one resolve body per probe subject, and the probe subjects."""
    from bench.generate import context_for
    from bench.resolve_bench import prepare

    manifest, _ = prepare(url, VERSIONS, regenerate=False)
    subjects = manifest["subjects"]
    bodies = [
        json.dumps({"subject": s["id"], "context": context_for(s["index"])}) for s in subjects
    ]
    return str(manifest["key"]), bodies, subjects


# --- server and load -------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def gunicorn(url: str, cache: bool, threads: int | None) -> Iterator[str]:
    with serving(url, cache, threads) as (base, _):
        yield base


@contextmanager
def serving(
    url: str, cache: bool, threads: int | None, root: Path = ROOT
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The web role as deployed (``deploy/gunicorn.conf.py``: gthread workers on
    ``config.wsgi``), 2 workers, on the source tree at ``root`` (``python -m`` puts that tree
    first on the path: ``bench.ab_servers`` serves two trees with this virtualenv), with
    ``threads`` request threads per worker (None: the deployed default). One agent drives
    every thread, as the targets were set: its per-tenant cap (``gateway.tenant_share``, a
    guard between tenants) is off here."""
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DEBUG": "false",
        "EMAIL_URL": "dummy://",  # DEBUG off needs a mail setting; the bench sends none
        "ALLOWED_HOSTS": "127.0.0.1",
        "MEMGOV_RESOLVE_CACHE": "true" if cache else "false",
        "MEMGOV_THROTTLE_RATE": THROTTLE_RATE,
        "MEMGOV_TENANT_MAX_IN_FLIGHT": "0",
        # Logged as deployed (deploy/Dockerfile): a JSON line per request at INFO.
        "MEMGOV_LOG_FORMAT": "json",
        "PYTHONUNBUFFERED": "1",
        "DJANGO_SETTINGS_MODULE": "bench.settings",  # production URLs plus /floor
        "GUNICORN_WORKERS": "2",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
    }
    if threads is not None:
        env["MEMGOV_WEB_THREADS"] = str(threads)
    command = [sys.executable, "-m", "gunicorn", "config.wsgi:application"]
    command += ["-c", "deploy/gunicorn.conf.py"]
    # Its JSON log lines go to a file that goes with the run: their cost is measured, the
    # terminal is not flooded.
    log = tempfile.NamedTemporaryFile(prefix="memgov-bench-", suffix=".log")  # noqa: SIM115
    process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=1):  # noqa: S310
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    print(log.read()[-4000:].decode(errors="replace"), file=sys.stderr)
                    raise SystemExit(f"gunicorn in {root} did not start") from None
                time.sleep(0.1)
        yield base, process
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


_LUA = """
local bodies = %(bodies)s
local i = 0
request = function()
  i = i + 1
  if #bodies == 0 then return wrk.format("GET", "%(path)s") end
  return wrk.format("POST", "%(path)s", {
    ["Content-Type"] = "application/json", ["Authorization"] = "Bearer %(key)s",
  }, bodies[(i %% #bodies) + 1])
end
done = function(summary, latency, requests)
  io.write(string.format(
    'RESULT {"requests": %%d, "seconds": %%f, "p50_ms": %%f, "p99_ms": %%f, '
    .. '"non_2xx": %%d, "socket_errors": %%d}\\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1e3,
    latency:percentile(99) / 1e3, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.timeout))
end
"""


def load(base: str, path: str, bodies: list[str], key: str, conns: int, secs: int) -> Any:
    """Drive ``path`` with wrk at ``conns`` connections: requests/s and latency."""
    script = _LUA % {
        "bodies": "{" + ",".join(json.dumps(b) for b in bodies) + "}",
        "path": path,
        "key": key,
    }
    with tempfile.TemporaryDirectory() as tmp:
        lua = Path(tmp) / "load.lua"
        lua.write_text(script)
        out = subprocess.run(
            [
                "wrk",
                f"-t{min(2, conns)}",
                f"-c{conns}",
                f"-d{secs}s",
                "--timeout=10s",
                "-s",
                str(lua),
                base,
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    result["rps"] = round(result["requests"] / result["seconds"], 1)
    return result


def warm(base: str, bodies: list[str], key: str) -> None:
    """Ask every body once, so the measured run finds an entry for each."""
    for body in bodies:
        request = urllib.request.Request(  # noqa: S310 - our own loopback server
            f"{base}/api/v1/resolve",
            data=body.encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            assert response.status == 200, response.status


# --- invalidation cost -----------------------------------------------------------------


def bump_cost(subjects: list[str], entry_counts: tuple[int, ...], repeats: int) -> Any:
    """Time one generation bump for a subject holding N entries (N distinct contexts).

    One entry per subject is written by a real resolve; the others get real keys (read
    through the cache's own generation script) and a small body, two minutes to live.
    The subjects' bumps alternate, so a slow spell of the host lands on each alike."""
    from django.utils import timezone

    from core import redis_client
    from core.principals import Principal
    from memory import generations, resolution
    from memory.models import Entity
    from memory.resolution import ResolveRequest

    def request(subject: str, i: int) -> ResolveRequest:
        return ResolveRequest(
            subject=subject,
            context={"task": f"T-bump-{i}"},
            fields=None,
            valid_at=None,
            known_at=None,
            task_id=None,
            explain=False,
        )

    client = redis_client.redis_client()
    cases: list[tuple[int, str, Principal, str, int, list[float]]] = []
    for count, subject_id in zip(entry_counts, subjects, strict=False):
        tenant = Entity.objects.select_related("tenant").get(pk=subject_id).tenant
        principal = Principal(tenant=tenant, name="agent:bench", labels=frozenset({"staff"}))
        pattern = f"mg:res:{tenant.pk}:{subject_id}:*"
        for stale in client.scan_iter(pattern, 1000):  # what the load or a last run left
            client.unlink(stale)
        resolution.cached_resolution(principal, request(subject_id, 0), timezone.now())
        with client.pipeline(transaction=False) as pipe:
            for i in range(1, count):
                shape = resolution.cache_shape(principal, request(subject_id, i))
                key = generations.read_entry(tenant.pk, subject_id, shape).key
                pipe.set(key, b'{"facts":[]}', px=120_000)
            pipe.execute()
        entries = sum(1 for _ in client.scan_iter(pattern, 1000))
        generation = generations.subject_generation_key(tenant.pk, subject_id)
        cases.append((count, subject_id, principal, generation, entries, []))
    for _ in range(repeats):
        for _count, _subject, _principal, generation, _entries, timings in cases:
            started = time.perf_counter()
            generations.bump([generation])
            timings.append((time.perf_counter() - started) * 1e6)
    out: dict[str, Any] = {}
    for count, subject_id, principal, _generation, entries, timings in cases:
        hits = redis_client.stats["hits"]
        resolution.cached_resolution(principal, request(subject_id, 0), timezone.now())
        assert redis_client.stats["hits"] == hits, "an entry survived its subject's bump"
        out[str(count)] = {
            "entries_in_redis": entries,
            "bump_median_us": round(statistics.median(timings), 1),
            "bump_p99_us": round(statistics.quantiles(timings, n=100)[98], 1),
        }
    return out


# --- main ------------------------------------------------------------------------------


def _median_round(results: list[dict[str, Any]]) -> dict[str, Any]:
    ordered = sorted(results, key=lambda r: r["rps"])
    return {**ordered[len(ordered) // 2], "rps_rounds": [r["rps"] for r in results]}


def measure(
    url: str, key: str, bodies: list[str], args: argparse.Namespace
) -> tuple[list[Any], dict[str, Any]]:
    """Floor, warm and cold at each concurrency, in interleaved rounds; median rounds. The
    floor and the warm resolve run back to back, and each round's warm/floor ratios are
    kept apart (``paired``, median of the rounds): a slow spell of the host then falls on
    both sides of a round's ratio rather than on one of two medians taken apart."""
    results: dict[tuple[str, int], list[dict[str, Any]]] = {}
    pairs: dict[int, list[tuple[float, float]]] = {}
    governed: dict[int, list[float]] = {}  # warm over the governed floor, each round
    with (
        gunicorn(url, cache=True, threads=args.threads) as on,
        gunicorn(url, cache=False, threads=args.threads) as off,
    ):
        for _ in range(args.rounds):
            for conns in args.concurrency:
                warm(on, bodies, key)  # an entry lives at most a minute
                floor = load(on, "/floor", [], key, conns, args.seconds)
                results.setdefault(("floor", conns), []).append(floor)
                hot = load(on, "/api/v1/resolve", bodies, key, conns, args.seconds)
                results.setdefault(("resolve_warm", conns), []).append(hot)
                pairs.setdefault(conns, []).append(
                    (hot["rps"] / floor["rps"], hot["p99_ms"] / max(floor["p99_ms"], 1e-9))
                )
                checks = load(on, "/floor/checks", bodies, key, conns, args.seconds)
                results.setdefault(("floor_checks", conns), []).append(checks)
                governed.setdefault(conns, []).append(hot["rps"] / checks["rps"])
                cold = load(off, "/api/v1/resolve", bodies, key, conns, args.seconds)
                results.setdefault(("resolve_cold", conns), []).append(cold)
    runs = [
        {"case": case, "concurrency": conns, **_median_round(found)}
        for (case, conns), found in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    ]
    paired = {
        str(conns): {
            "warm_over_floor": round(statistics.median(rps for rps, _ in found), 3),
            "warm_over_floor_rounds": [round(rps, 3) for rps, _ in found],
            "warm_p99_over_floor_p99": round(statistics.median(p99 for _, p99 in found), 3),
            "warm_over_governed": round(statistics.median(governed[conns]), 3),
            "warm_over_governed_rounds": [round(rps, 3) for rps in governed[conns]],
        }
        for conns, found in pairs.items()
    }
    return runs, paired


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    parser.add_argument(
        "--threads", type=int, help="request threads per worker (default: as deployed)"
    )
    args = parser.parse_args()
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith(("postgres://", "postgresql://")) or not os.environ.get("REDIS_URL"):
        raise SystemExit("set DATABASE_URL (PostgreSQL) and REDIS_URL")
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is missing: apt-get install -y wrk")
    url = _size_url(base, SIZE)
    sys.path.insert(0, str(ROOT))
    key, bodies, subjects = workload(url)

    load_before = os.getloadavg()[0]
    runs, paired = measure(url, key, bodies, args)
    load_after = os.getloadavg()[0]

    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from memory.models import MemoryVersion

    invalidation = bump_cost([s["id"] for s in subjects[-2:]], (10, 10_000), repeats=2000)
    by = {(r["case"], r["concurrency"]): r["rps"] for r in runs}
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": shlex.join([".venv/bin/python", "-m", "bench.cache_bench", *sys.argv[1:]]),
        "database": urlsplit(url).path[1:],
        "versions_in_database": MemoryVersion.objects.count(),
        "server": {
            "gunicorn_workers": 2,
            "worker_class": "gthread",
            "threads": args.threads or "deployed default",
            "debug": False,
        },
        "cpus": os.cpu_count(),
        "load_average_before_after": [round(load_before, 2), round(load_after, 2)],
        "seconds_per_case": args.seconds,
        "rounds": args.rounds,
        "runs": runs,
        "ratios": {
            str(c): {
                "warm_over_floor": round(by["resolve_warm", c] / by["floor", c], 2),
                "warm_over_cold": round(by["resolve_warm", c] / by["resolve_cold", c], 2),
                # The most a cached resolve could reach with its two round trips.
                "checks_over_floor": round(by["floor_checks", c] / by["floor", c], 2),
            }
            for c in args.concurrency
        },
        "paired": paired,
        "targets": TARGETS,
        "invalidation": invalidation,
    }
    path = report_path("cache")
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(table(report))
    print(f"written to {path.relative_to(ROOT)}")


def table(report: dict[str, Any]) -> str:
    lines = [
        f"{report['versions_in_database']:,} versions, 2 gunicorn "
        f"{report['server']['worker_class']} workers x {report['server']['threads']} threads, "
        f"{report['cpus']} CPUs, load average {report['load_average_before_after']}, "
        f"median of {report['rounds']} rounds of {report['seconds_per_case']} s",
        f"{'case':<14}{'conc':>6}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'non-2xx':>9}",
    ]
    for r in report["runs"]:
        lines.append(
            f"{r['case']:<14}{r['concurrency']:>6}{r['rps']:>10.0f}"
            f"{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}{r['non_2xx']:>9}"
        )
    for conns, ratio in report["ratios"].items():
        lines.append(
            f"c={conns}: warm/floor {ratio['warm_over_floor']} (target 0.7), "
            f"warm/cold {ratio['warm_over_cold']} (target 3); floor+checks/floor "
            f"{ratio['checks_over_floor']} (the most warm can reach with its round trips)"
        )
    for cost in report["invalidation"].values():
        lines.append(
            f"bump with {cost['entries_in_redis']:>6} entries: median "
            f"{cost['bump_median_us']} us, p99 {cost['bump_p99_us']} us"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
