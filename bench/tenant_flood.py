"""One tenant's flood against another tenant's latency (issue 33, point 13): a few seconds,
loopback only, against a server that is already running.

    .venv/bin/python -m bench.tenant_flood --base http://127.0.0.1:8000 \\
        --busy-key mg_... --other-key mg_... [--clients 32] [--seconds 3]

A "key" is an API key, or a dashboard session as its cookie (``sessionid=...``): anything
of the form ``name=value`` is sent as a cookie.

The other tenant's key asks ``--path`` (one request at a time) alone, then while the busy
tenant's key asks it from ``--clients`` connections at once in a process of its own (so
the client threads do not slow the measuring one); it prints both p50s and what the busy
tenant was answered. ``--flood`` runs only the busy tenant's part and prints it as JSON
(``tests/cache/test_tenant_share_live.py`` uses it)."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from typing import Any

PATH = "/api/v1/memories"


def credentials(key: str) -> dict[str, str]:
    """An API key as a bearer token; ``name=value`` (a session) as a cookie."""
    return {"Cookie": key} if "=" in key else {"Authorization": f"Bearer {key}"}


def ask(base: str, path: str, key: str) -> tuple[int, float, dict[str, str]]:
    """One GET: status, seconds, the headers that matter here."""
    request = urllib.request.Request(  # noqa: S310 - loopback benchmark
        f"{base}{path}", headers=credentials(key)
    )
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            response.read()
            status, headers = response.status, response.headers
    except urllib.error.HTTPError as error:
        error.read()
        status, headers = error.code, error.headers
    wanted = ("Content-Type", "Retry-After")
    return status, time.perf_counter() - started, {h: headers.get(h, "") for h in wanted}


def flood(
    base: str, path: str, key: str, clients: int, seconds: float, obey: bool = True
) -> dict[str, Any]:
    """``clients`` threads asking without pause for ``seconds``; refused, each waits as
    ``Retry-After`` says (as Memgov's client does) unless ``obey`` is off."""
    answers: list[tuple[int, float, dict[str, str]]] = []
    deadline = time.monotonic() + seconds

    def client() -> None:
        while time.monotonic() < deadline:
            answers.append(ask(base, path, key))
            retry_after = answers[-1][2]["Retry-After"]
            if obey and retry_after:
                time.sleep(min(float(retry_after), max(0.0, deadline - time.monotonic())))

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    refused = [a for a in answers if a[0] == 429]
    return {
        "statuses": dict(Counter(str(a[0]) for a in answers)),
        "p50_ms": _p50([a[1] for a in answers if a[0] == 200]),
        "refusals": [a[2] for a in refused[:3]],
    }


def flooding(
    base: str, path: str, key: str, clients: int, seconds: float, obey: bool = True
) -> subprocess.Popen[str]:
    """``flood`` in a process of its own; its JSON comes on stdout."""
    command = [sys.executable, "-m", "bench.tenant_flood", "--flood", "--base", base]
    command += ["--path", path, "--busy-key", key, "--clients", str(clients)]
    command += ["--seconds", str(seconds), *([] if obey else ["--ignore-retry-after"])]
    return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)


def sequential(base: str, path: str, key: str, seconds: float) -> list[tuple[int, float]]:
    """One request at a time for ``seconds``: status and seconds of each."""
    answers = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status, took, _ = ask(base, path, key)
        answers.append((status, took))
    return answers


def _p50(seconds: list[float]) -> float | None:
    return round(statistics.median(seconds) * 1000, 2) if seconds else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--path", default=PATH)
    parser.add_argument("--busy-key", required=True)
    parser.add_argument("--other-key")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--flood", action="store_true")
    parser.add_argument("--ignore-retry-after", action="store_true")
    args = parser.parse_args(argv)
    if not args.base.startswith(("http://127.", "http://localhost")):
        parser.error("loopback only")
    if args.flood:
        obey = not args.ignore_retry_after
        answers = flood(args.base, args.path, args.busy_key, args.clients, args.seconds, obey)
        print(json.dumps(answers))
        return
    if not args.other_key:
        parser.error("--other-key is needed unless --flood")
    alone = sequential(args.base, args.path, args.other_key, args.seconds)
    obey = not args.ignore_retry_after
    busy = flooding(args.base, args.path, args.busy_key, args.clients, args.seconds, obey)
    time.sleep(0.5)  # the flood's clients are connected and asking
    under = sequential(args.base, args.path, args.other_key, args.seconds - 1)
    flooded = json.loads(busy.communicate(timeout=args.seconds + 60)[0])
    print(f"other tenant alone:        p50 {_p50([s for _, s in alone])} ms, {len(alone)} asked")
    print(
        f"other tenant under flood:  p50 {_p50([s for _, s in under])} ms, {len(under)} asked, "
        f"statuses {dict(Counter(status for status, _ in under))}"
    )
    print(
        f"busy tenant ({args.clients} clients): p50 {flooded['p50_ms']} ms, {flooded['statuses']}"
    )


if __name__ == "__main__":
    main()
