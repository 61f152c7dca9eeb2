"""Approval-to-active latency and re-validation throughput, with a real Celery worker.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memgov_bench_approvals \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/5 CACHE_URL=redis://127.0.0.1:6379/4 \\
        .venv/bin/python -m bench.approval_latency [--items 100] [--concurrency 2]

It creates the database when missing and migrates it, creates a fresh tenant (a new slug
per run), starts ``celery -A config worker`` (prefork, ``--concurrency``) against the
same database and broker, then:

1. **Latency**: ``--items`` enterprise rules (ten subjects, ten projects each, so every
   gate run also has regression scenarios), one at a time: propose, first approval, wait
   for the preview checks and the reviewers' notices, then the second (last) approval.
   The latency is from the moment that approval has committed (``version_approve``
   returned: the gate task was handed to the broker) to the version's ``activated_at``
   (set in the activation transaction). Reported: p50, p95, max, mean.
2. **Re-validation throughput**: ``revalidation_start`` over every active item of the
   tenant; items/second from the job's start to the moment it reports ``done``.

Results go to ``bench/results/approval-latency-<date>.json`` and are printed (the worker's
log goes to a temporary directory, named on stderr). Use a broker
database nobody else consumes from (``CELERY_BROKER_URL``): the run purges it.
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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.reports import report_path

ROOT = Path(__file__).resolve().parent.parent

# Set before Django reads its settings.
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memgov_bench_approvals")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("EMAIL_URL", "dummy://")


def _ensure_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def _setup_django() -> None:
    import django

    sys.path.insert(0, str(ROOT))
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _wait(what: str, condition: Any, timeout: float = 120.0, every: float = 0.005) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {what}")
        time.sleep(every)


def _start_worker(concurrency: int, log: Path) -> subprocess.Popen[bytes]:
    command = [
        *(sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=prefork"),
        *(f"--concurrency={concurrency}", "--loglevel=WARNING", "--without-mingle"),
        *("--without-gossip", "-n", f"bench-{uuid.uuid4().hex[:8]}@%h"),
    ]
    with log.open("wb") as out:
        worker = subprocess.Popen(
            command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    return worker


class Setup:
    """A fresh tenant with two rule reviewers, ten subjects and one approval record."""

    def __init__(self) -> None:
        from accounts import tenancy
        from accounts.grants import permission_grant
        from core.principals import Principal
        from memory import entities, sources

        slug = f"bench-approvals-{uuid.uuid4().hex[:8]}"
        self.tenant = tenancy.tenant_create(slug=slug, name="Approval latency benchmark")
        self.reviewers = []
        for name in ("reviewer-a", "reviewer-b"):
            user = tenancy.user_create(
                tenant=self.tenant, username=f"{slug}-{name}", password=None, email="r@example.com"
            )
            permission_grant(user=user, tenant=self.tenant, codename="review_enterprise_rule")
            self.reviewers.append(
                Principal(
                    tenant=self.tenant,
                    name=f"user:{user.username}",
                    labels=frozenset({"*"}),
                    user=user,
                )
            )
        self.owner = self.reviewers[0].user
        self.agent = Principal(tenant=self.tenant, name="agent:bench", labels=frozenset({"*"}))
        self.subjects = [
            entities.entity_create(principal=self.agent, kind="process", name=f"process {i}").pk
            for i in range(10)
        ]
        record = {"kind": "approval_record", "content": "APR-2291 v3", "external_ref": "APR-2291"}
        self.source = sources.source_record(principal=self.agent, data=record).pk

    def proposal(self, index: int) -> dict[str, Any]:
        assert self.owner is not None
        return {
            "kind": "enterprise_rule",
            "subject": self.subjects[index % 10],
            "field": "material_checks",
            "value": f"follow exception APR-2291 for P-{index // 10}",
            "statement": "Renewals follow exception APR-2291.",
            "scope": {"project": f"P-{index // 10}"},
            "owner": self.owner.username,
            "expires_at": datetime.now(UTC) + timedelta(days=90),
            "sources": [self.source],
            "basis": {"ref": "APR-2291", "version": "3"},
        }


def measure_latency(setup: Setup, items: int) -> list[float]:
    from approvals.models import CheckResult, Notification
    from approvals.services import version_approve
    from memory import proposals
    from memory.models import MemoryItem, MemoryVersion, Status

    latencies = []
    for index in range(items):
        version = proposals.memory_propose(principal=setup.agent, data=setup.proposal(index))
        item = MemoryItem.objects.get(pk=version.item_id)
        version_approve(principal=setup.reviewers[0], item=item, comment="first")
        _wait(
            "the preview and the notices",
            lambda v=version: (
                CheckResult.objects.filter(version=v, run="preview").exists()
                and Notification.objects.filter(event=f"pending:{v.pk}").exists()
            ),
        )
        version_approve(principal=setup.reviewers[1], item=item, comment="last")
        committed = datetime.now(UTC)
        _wait(
            "the activation",
            lambda v=version: (
                MemoryVersion.objects.filter(pk=v.pk).exclude(status=Status.CHECKING).exists()
            ),
        )
        version.refresh_from_db()
        if version.status != Status.ACTIVE or version.activated_at is None:
            raise SystemExit(f"{version} ended {version.status}: {version.status_reason}")
        latencies.append((version.activated_at - committed).total_seconds())
    return latencies


def measure_revalidation(setup: Setup) -> dict[str, Any]:
    from approvals.models import Revalidation
    from approvals.revalidation import revalidation_start

    started = time.monotonic()
    job = revalidation_start(tenant=setup.tenant, reason="bench: model changed", actor="bench")
    _wait(
        "the re-validation",
        lambda: Revalidation.objects.get(pk=job.pk).status == Revalidation.Status.DONE,
        timeout=600,
        every=0.02,
    )
    elapsed = time.monotonic() - started
    job.refresh_from_db()
    return {
        "items": job.total,
        "failed": job.failed,
        "seconds": round(elapsed, 3),
        "items_per_second": round(job.total / elapsed, 1),
    }


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=2, help="worker pool processes")
    args = parser.parse_args()
    _ensure_database(os.environ["DATABASE_URL"])
    _setup_django()
    from config.celery import app

    app.control.purge()
    setup = Setup()
    log = Path(tempfile.mkdtemp(prefix="memgov-bench-")) / "worker.log"
    print(f"worker log: {log}", file=sys.stderr)
    worker = _start_worker(args.concurrency, log)
    try:
        load_before = os.getloadavg()
        latencies = measure_latency(setup, args.items)
        revalidation = measure_revalidation(setup)
        load_after = os.getloadavg()
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    report = {
        "benchmark": "approval-latency",
        "command": " ".join(sys.argv),
        "at": datetime.now(UTC).isoformat(),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_before": load_before,
            "load_after": load_after,
        },
        "worker": {"pool": "prefork", "concurrency": args.concurrency},
        "last_approval_to_active_ms": {
            "items": len(latencies),
            "p50": round(1000 * _quantile(latencies, 0.50), 1),
            "p95": round(1000 * _quantile(latencies, 0.95), 1),
            "max": round(1000 * max(latencies), 1),
            "mean": round(1000 * statistics.fmean(latencies), 1),
        },
        "revalidation": revalidation,
    }
    path = report_path("approval-latency")
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
