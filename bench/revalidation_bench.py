"""Revalidation throughput with a real Celery worker, and the time of one item's gate checks.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memgov_bench REDIS_URL=redis://… \\
        .venv/bin/python -m bench.revalidation_bench [--size 100k] [--concurrency 2]

Copies ``<DATABASE_URL>_<size>`` (``bench.generate``'s data, generated when missing) to
``<DATABASE_URL>_reval`` (``CREATE DATABASE … TEMPLATE``), so the run changes nothing the
other benchmarks read. In the copy, the tenant with the most active versions is set to
``flag`` (failures are listed, not suspended), then:

1. **Gate checks of one item**: ``checking.checks_run`` (every scenario evaluated and its
   results recorded, as the gate does before activating) for ``--sample`` active versions,
   in this process: p50/p95 ms.
2. **Revalidation**: ``revalidation_start`` over every active version of that tenant with
   ``celery -A config worker`` (prefork, ``--concurrency``) running the chunks; items/s
   from the start to the job reporting ``done``, and what that rate means for a tenant
   with 100,000 active items (linear: chunks are independent and each version's cost does
   not depend on the table's size, the candidate query being an index scan).

Results: printed, and ``bench/results/revalidation-<date>.json`` with the load average.
Use a Redis whose broker database nobody else consumes from: the run purges it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.generate import SIZES
from bench.reports import report_path

ROOT = Path(__file__).resolve().parent.parent
ITEMS_PER_SECOND_TARGET = 300.0
TENANT_100K_SECONDS_TARGET = 600.0
GATE_P95_MS_TARGET = 100.0


def _size_url(base: str, suffix: str) -> str:
    parts = urlsplit(base)
    return parts._replace(path=f"{parts.path}_{suffix}").geturl()


def _copy_database(source: str, target: str) -> None:
    import psycopg

    admin = urlsplit(source)._replace(path="/postgres").geturl()
    src, dst = urlsplit(source).path.lstrip("/"), urlsplit(target).path.lstrip("/")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{dst}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{dst}" TEMPLATE "{src}"')


def _drop_database(url: str) -> None:
    import psycopg

    admin = urlsplit(url)._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{urlsplit(url).path.lstrip("/")}" WITH (FORCE)')


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _start_worker(concurrency: int, log: Path) -> subprocess.Popen[bytes]:
    command = [
        *(sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=prefork"),
        *(f"--concurrency={concurrency}", "--loglevel=WARNING", "--without-mingle"),
        *("--without-gossip", "-n", f"bench-{uuid.uuid4().hex[:8]}@%h"),
    ]
    with log.open("wb") as out:
        return subprocess.Popen(
            command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def gate_checks(tenant: Any, sample: int) -> dict[str, Any]:
    from approvals import checking
    from approvals.models import CheckResult
    from memory.models import MemoryVersion, Status

    versions = list(
        MemoryVersion.objects.filter(tenant=tenant, status=Status.ACTIVE)
        .select_related("tenant")
        .order_by("?")[:sample]
    )
    times = []
    scenarios = 0
    for version in versions:
        started = time.perf_counter()
        _, results = checking.checks_run(version=version, run=CheckResult.Run.PREVIEW)
        times.append(time.perf_counter() - started)
        scenarios += len(results)
    return {
        "items": len(times),
        "scenarios_per_item": round(scenarios / max(1, len(times)), 1),
        "p50_ms": round(1000 * _quantile(times, 0.5), 1),
        "p95_ms": round(1000 * _quantile(times, 0.95), 1),
        "mean_ms": round(1000 * statistics.fmean(times), 1),
    }


def revalidate(tenant: Any, concurrency: int) -> dict[str, Any]:
    from approvals.models import Revalidation
    from approvals.revalidation import revalidation_start
    from config.celery import app

    app.control.purge()
    log = Path(tempfile.mkdtemp(prefix="memgov-bench-")) / "worker.log"
    print(f"  worker log: {log}", file=sys.stderr, flush=True)
    worker = _start_worker(concurrency, log)
    try:
        time.sleep(3)  # the worker's pool is up before the clock starts
        started = time.monotonic()
        job = revalidation_start(tenant=tenant, reason="bench: model changed", actor="bench")
        deadline = started + 1800
        while True:
            job.refresh_from_db()
            if job.status == Revalidation.Status.DONE:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"revalidation not done after 30 min: {job.done}/{job.total}")
            time.sleep(0.05)
        elapsed = time.monotonic() - started
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    rate = job.total / elapsed
    return {
        "items": job.total,
        "failed": job.failed,
        "seconds": round(elapsed, 2),
        "items_per_second": round(rate, 1),
        "tenant_100k_seconds": round(100_000 / rate, 1),
    }


def django_on_copy(source: str, copy: str, versions: int) -> str:
    """``bench.generate``'s data at ``source`` (generated when missing) copied to ``copy``,
    which Django is then set up on; the copy's URL."""
    from bench.resolve_bench import prepare

    prepare(source, versions, regenerate=False)
    _copy_database(source, copy)
    os.environ.update(
        DATABASE_URL=copy,
        DJANGO_SETTINGS_MODULE="config.settings",
        SECRET_KEY=os.environ.get("SECRET_KEY", "bench-only-secret-key"),
        LOG_LEVEL="WARNING",
        EMAIL_URL="dummy://",
    )
    import django

    sys.path.insert(0, str(ROOT))
    django.setup()
    return copy


def busiest_tenant_flagging() -> Any:
    """The tenant with the most active versions, set to ``flag``: its failures are listed,
    not suspended, so every run rechecks the same versions."""
    from django.db.models import Count

    from core.models import Tenant
    from memory.models import MemoryVersion

    busiest = (
        MemoryVersion.objects.filter(status="active")
        .values("tenant_id")
        .annotate(active=Count("id"))
        .order_by("-active")
        .first()
    )
    assert busiest is not None
    Tenant.objects.filter(pk=busiest["tenant_id"]).update(revalidation_failure="flag")
    return Tenant.objects.get(pk=busiest["tenant_id"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="100k", help="the generated database to copy")
    parser.add_argument("--sample", type=int, default=100, help="items timed for gate checks")
    parser.add_argument("--concurrency", type=int, default=2, help="worker pool processes")
    args = parser.parse_args()
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memgov_bench")
    source = _size_url(base, args.size)
    copy = django_on_copy(source, _size_url(base, "reval"), SIZES[args.size])
    tenant = busiest_tenant_flagging()
    load_before = os.getloadavg()
    print(f"  gate checks of {args.sample} items …", flush=True)
    gate = gate_checks(tenant, args.sample)
    print(f"  revalidating tenant {tenant.slug} …", flush=True)
    revalidation = revalidate(tenant, args.concurrency)
    load_after = os.getloadavg()
    from django.db import connections

    connections.close_all()
    _drop_database(copy)
    report = {
        "benchmark": "revalidation",
        "command": " ".join([".venv/bin/python -m bench.revalidation_bench", *sys.argv[1:]]),
        "at": datetime.now(UTC).isoformat(),
        "database": f"copy of {urlsplit(source).path.lstrip('/')}",
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in load_after],
        },
        "worker": {"pool": "prefork", "concurrency": args.concurrency},
        "gate_checks_one_item": gate,
        "revalidation": revalidation,
        "targets": {
            "items_per_second": {
                "value": revalidation["items_per_second"],
                "target": ITEMS_PER_SECOND_TARGET,
                "met": revalidation["items_per_second"] >= ITEMS_PER_SECOND_TARGET,
            },
            "tenant_100k_seconds": {
                "value": revalidation["tenant_100k_seconds"],
                "target": TENANT_100K_SECONDS_TARGET,
                "met": revalidation["tenant_100k_seconds"] <= TENANT_100K_SECONDS_TARGET,
            },
            "gate_checks_p95_ms": {
                "value": gate["p95_ms"],
                "target": GATE_P95_MS_TARGET,
                "met": gate["p95_ms"] <= GATE_P95_MS_TARGET,
            },
        },
    }
    path = report_path("revalidation")
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
