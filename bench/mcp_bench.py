"""``/mcp`` as deployed against the MCP server in its own process: the two arrangements
issue 34 named (docs/decisions/0017-gthread-web-role-mcp-through-a2wsgi.md).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memgov_speed \\
    REDIS_URL=redis://127.0.0.1:6379/10 .venv/bin/python -m bench.mcp_bench [--rounds 3]

- ``bridged``: gunicorn, 2 gthread workers x 4 threads, ``/mcp`` through a2wsgi
  (``config.mcp``), as every deployment serves it;
- ``uvicorn``: the same MCP server in a process of its own, ``uvicorn config.asgi:application
  --workers 2`` (the ASGI application the contract names; only ``/mcp`` is asked of it).

Both on the 10k data, cache off, load from wrk: a ``tools/call`` of ``resolve`` over
streamable HTTP (stateless, JSON answers) about one of 500 subjects, with 1 and 8 clients;
the rounds interleave the two servers. The REST resolve of the gunicorn server is measured
beside them for reference. Writes ``bench/results/mcp-<date>.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import urllib.error
import urllib.request
from datetime import UTC, datetime
from typing import Any

from bench.generate import SIZES, context_for
from bench.reports import report_path
from bench.resolve_bench import PYTHON, ROOT, _size_url, gunicorn, prepare, serving, wrk

MCP_ACCEPT = "application/json, text/event-stream"
CASES = ("bridged", "uvicorn", "rest")


def tool_call(number: int, subject: str, context: dict[str, str]) -> str:
    arguments = {"subject": subject, "context": context}
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": number,
            "method": "tools/call",
            "params": {"name": "resolve", "arguments": arguments},
        }
    )


def _answer(base: str, path: str, body: str, key: str, accept: str) -> dict[str, Any]:
    request = urllib.request.Request(  # noqa: S310 - our own server on loopback
        f"{base}{path}",
        data=body.encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": accept,
            "Authorization": f"Bearer {key}",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        answer: dict[str, Any] = json.loads(response.read())
    return answer


def check_mcp(base: str, body: str, key: str) -> None:
    """A real answer before measuring: a benchmark of errors measures nothing."""
    answer = _answer(base, "/mcp", body, key, MCP_ACCEPT)
    result = answer.get("result") or {}
    if result.get("isError") or not result.get("structuredContent", {}).get("facts"):
        raise SystemExit(f"the MCP resolve did not answer with facts: {answer}")


def uvicorn(url: str, args: argparse.Namespace) -> contextlib.AbstractContextManager[str]:
    return serving(
        url,
        args,
        lambda port: [
            PYTHON,
            "-m",
            "uvicorn",
            "config.asgi:application",
            "--host=127.0.0.1",
            f"--port={port}",
            f"--workers={args.workers}",
            "--log-level=warning",
            "--no-access-log",
        ],
    )


def measure(args: argparse.Namespace, url: str, manifest: dict[str, Any]) -> dict[str, Any]:
    key = manifest["key"]
    subjects = manifest["subjects"]
    mcp_bodies = [tool_call(n, s["id"], context_for(s["index"])) for n, s in enumerate(subjects, 1)]
    rest_bodies = [
        json.dumps({"subject": s["id"], "context": context_for(s["index"])}) for s in subjects
    ]
    rounds: list[dict[str, Any]] = []
    with gunicorn(url, args) as bridged, uvicorn(url, args) as alone:
        served = {
            "bridged": (bridged, "/mcp", mcp_bodies, MCP_ACCEPT),
            "uvicorn": (alone, "/mcp", mcp_bodies, MCP_ACCEPT),
            "rest": (bridged, "/api/v1/resolve", rest_bodies, None),
        }
        for base in (bridged, alone):
            check_mcp(base, mcp_bodies[0], key)
        for base, path, bodies, accept in served.values():
            wrk(base, path, bodies, key, 8, args.warmup, accept)
        for number in range(args.rounds):
            print(f"  round {number + 1}/{args.rounds}", flush=True)
            result: dict[str, Any] = {"load_average": os.getloadavg()[0]}
            order = CASES if number % 2 == 0 else CASES[::-1]
            for clients in (1, 8):
                for case in order:
                    base, path, bodies, accept = served[case]
                    result[f"{case}_c{clients}"] = wrk(
                        base, path, bodies, key, clients, args.seconds, accept
                    )
            rounds.append(result)
    return {"rounds": rounds, "median": _medians(rounds)}


def _medians(rounds: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    runs = [name for name in rounds[0] if name != "load_average"]
    return {
        name: {
            stat: round(statistics.median(r[name][stat] for r in rounds), 3)
            for stat in ("p50_ms", "p95_ms", "p99_ms", "rps", "non_2xx")
        }
        for name in runs
    }


def table(median: dict[str, dict[str, float]]) -> str:
    lines = [f"{'case':<16}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'req/s':>9}{'non-2xx':>9}"]
    for name, stats in median.items():
        lines.append(
            f"{name:<16}{stats['p50_ms']:>9.2f}{stats['p95_ms']:>9.2f}{stats['p99_ms']:>9.2f}"
            f"{stats['rps']:>9.0f}{stats['non_2xx']:>9.0f}"
        )
    for clients in (1, 8):
        bridged, alone = median[f"bridged_c{clients}"], median[f"uvicorn_c{clients}"]
        lines.append(
            f"{clients} client(s): bridged / uvicorn p50 "
            f"{bridged['p50_ms'] / alone['p50_ms']:.2f}, req/s {bridged['rps'] / alone['rps']:.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", ""))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args(argv)
    if not args.database_url.startswith(("postgres://", "postgresql://")):
        raise SystemExit("set DATABASE_URL (or --database-url) to a PostgreSQL URL")
    url = _size_url(args.database_url, "10k")
    manifest, _ = prepare(url, SIZES["10k"], regenerate=False)
    started = datetime.now(UTC)
    measured = measure(args, url, manifest)
    report = {
        "benchmark": "mcp",
        "command": "python -m bench.mcp_bench " + " ".join(argv or []),
        "at": started.isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count()},
        "servers": {"workers": args.workers, "gunicorn_threads": args.threads},
        **measured,
    }
    path = report_path("mcp")
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(table(measured["median"]))
    print(f"({path.relative_to(ROOT)})")


if __name__ == "__main__":
    main()
