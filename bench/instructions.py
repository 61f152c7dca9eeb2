"""Instructions a cold resolve costs, by callgrind: a count that repeats to about 1% between
runs paced alike (what depends on the clock, a key's use stamp or a cached entry's end,
moves it a little), where time on a shared two-core machine moves by a tenth from one
minute to the next.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memgov_speed_100k \\
    REDIS_URL=redis://127.0.0.1:6379/10 \\
        .venv/bin/python -m bench.instructions [--requests 300] [--tree PATH] [piece ...]

Each piece runs in its own process under ``valgrind --tool=callgrind`` (Debian package
``valgrind``), which counts only what happens inside ``functools.reduce``: the measured
loop, after Django has started and 50 warm-up calls. Pieces: ``full`` (``POST
/api/v1/resolve`` through the WSGI application, cache off), ``warm`` (the same with the
cache on, every answer cached by the warm-up), ``floor`` (``GET /floor``), ``checks``
(``/floor/checks``, cache on: the floor plus the round trip a warm resolve needs),
and parts of a resolve on their own: ``decide``, ``candidate_rows``, ``to_candidate``,
``resolver``, ``body``, ``key``. Printed as instructions per call, and written to
``bench/results/instructions-<date>.json``. ``--tree`` measures another checkout (a
``git worktree`` of an earlier commit) with this virtualenv, for a before/after.

Only this process is counted, not PostgreSQL, Redis or the kernel: the count ranks
changes to Memgov's own code. The targets are judged over HTTP (``bench.resolve_bench``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.reports import report_path

ROOT = Path(__file__).resolve().parent.parent
PIECES = (
    "full",
    "warm",
    "floor",
    "checks",
    "decide",
    "candidate_rows",
    "to_candidate",
    "resolver",
    "body",
    "key",
)
WARM_UP = 50


def _pieces(cache_on: bool) -> dict[str, Any]:
    """The calls to count, each taking the request's number (its subject is the number's)."""
    from bench import profile_resolve  # its import sets the in-process server's environment

    os.environ["MEMGOV_RESOLVE_CACHE"] = "true" if cache_on else "false"
    import django

    django.setup()
    from django.core.wsgi import get_wsgi_application
    from django.utils import timezone

    from accounts import keys
    from agent_interface.answers import _resolve_request
    from bench.generate import context_for, info
    from core.principals import principal_for_key
    from memory import candidates, resolution, resolver

    application = get_wsgi_application()
    manifest = info(probes=500)
    subjects = manifest["subjects"]
    count = len(subjects)
    bodies = [
        json.dumps({"subject": s["id"], "context": context_for(s["index"])}).encode()
        for s in subjects
    ]

    def http(path: str, body: bytes, key: str | None) -> None:
        status: list[str] = []

        def start_response(line: str, headers: Any, *_: Any) -> Any:
            status.append(line)
            return lambda _: None

        b"".join(application(profile_resolve._environ(path, body, key), start_response))
        if not status[0].startswith("200"):
            raise SystemExit(f"{path} answered {status[0]}")

    for i in range(WARM_UP):  # the statement prepared
        http("/api/v1/resolve", bodies[i % count], manifest["key"])
    key = keys.api_key_for_raw(manifest["key"])
    if key is None:
        raise SystemExit("the agent key is not live")
    principal = principal_for_key(key)
    now = timezone.now()
    asked = [
        _resolve_request({"subject": s["id"], "context": context_for(s["index"]), "explain": False})
        for s in subjects
    ]
    requests = [
        candidates.CandidateRequest(
            tenant_id=principal.tenant.pk,
            subject_id=a.subject,
            fields=None,
            context=a.context,
            known_at=now,
            with_policy=True,
        )
        for a in asked
    ]
    rows = [candidates.candidate_rows(r) for r in requests]
    found = [[candidates.to_candidate(row, now, None) for row in rs] for rs in rows]
    policy = candidates._stated_policy(rows[0][0].policy_version, rows[0][0].policy_precedence)
    queries = [
        resolver.Query(context=a.context, valid_at=now, known_at=now, labels=principal.labels)
        for a in asked
    ]
    decisions = [resolution.decide(principal, a, now) for a in asked]

    def resolve(i: int) -> None:
        http("/api/v1/resolve", bodies[i % count], manifest["key"])

    return {
        "full": resolve,
        "warm": resolve,  # the same request, in a process with the cache on (``child``)
        "floor": lambda i: http("/floor", b"", None),
        "checks": lambda i: http("/floor/checks", b"", manifest["key"]),
        "decide": lambda i: resolution.decide(principal, asked[i % count], now),
        "candidate_rows": lambda i: candidates.candidate_rows(requests[i % count]),
        "to_candidate": lambda i: [
            candidates.to_candidate(row, now, None) for row in rows[i % count]
        ],
        "resolver": lambda i: resolver.resolve(found[i % count], queries[i % count], policy),
        "body": lambda i: resolution.resolution_body(decisions[i % count], explain=False),
        "key": lambda i: keys.api_key_for_raw(manifest["key"]),
    }


def child(piece: str, calls: int) -> None:
    """Under callgrind: warm up, then the counted loop inside ``functools.reduce``. A warm
    count holds only if every counted call was a hit: an entry ends at its candidates'
    next change or after a minute, which a slow valgrind run can outlast."""
    call = _pieces(cache_on=piece in ("warm", "checks"))[piece]
    from core import redis_client  # after _pieces: importing it first settles Django's settings

    for i in range(max(WARM_UP, calls)):  # a warm resolve's entries stored
        call(i)
    missed = redis_client.stats["misses"]
    functools.reduce(lambda _, i: call(i), range(calls), None)
    missed = redis_client.stats["misses"] - missed
    if piece == "warm" and missed:
        raise SystemExit(
            f"{missed} of the {calls} counted calls missed the cache: count the warm piece "
            "on its own, or with fewer beside it"
        )


def count(tree: Path, piece: str, calls: int) -> float:
    """Instructions per call of ``piece`` in the checkout at ``tree``."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--collect-atstart=no",
        "--toggle-collect=functools_reduce",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        str(Path(__file__).resolve()),  # this file, measuring the code of ``tree``
        "--child",
        piece,
        "--requests",
        str(calls),
    ]
    # The tree's packages first: an earlier commit is measured with this file's loop.
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or found is None:
        raise SystemExit(f"{piece} in {tree} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1)) / calls


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pieces", nargs="*", default=["full", "floor"], help=", ".join(PIECES))
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to measure")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.requests)
        return
    unknown = set(args.pieces) - set(PIECES)
    if unknown:
        raise SystemExit(f"unknown pieces: {', '.join(sorted(unknown))}")
    tree = args.tree.resolve()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        counted = dict(
            zip(
                args.pieces,
                pool.map(lambda p: count(tree, p, args.requests), args.pieces),
                strict=True,
            )
        )
    commit = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([".venv/bin/python", "-m", "bench.instructions", *sys.argv[1:]]),
        "tree": str(tree),
        "commit": commit,
        "database": os.environ.get("DATABASE_URL", ""),
        "requests": args.requests,
        "instructions_per_call": {piece: round(value) for piece, value in counted.items()},
    }
    for piece, value in counted.items():
        print(f"{piece:<15} {value:>12,.0f} instructions a call")
    if "full" in counted and "floor" in counted:
        print(f"{'full / floor':<15} {counted['full'] / counted['floor']:>12.2f}")
    out = report_path("instructions")
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
