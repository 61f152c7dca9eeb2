"""Erasure of a subject with 10,000 versions and 2,000 sources on PostgreSQL (issue 12).

```sh
DATABASE_URL=postgres://postgres@127.0.0.1:5432/memgov_bench \
REDIS_URL=redis://127.0.0.1:6379/0 \
    .venv/bin/python -m bench.erasure_bench [--versions 10000] [--sources 2000]
```

Creates (drops and recreates) its own database, ``<name of DATABASE_URL>_erasure`` (so
``make bench`` never drops another benchmark's data), migrates it, makes a
tenant and a privacy officer through the services, then bulk-inserts one subject with
``--versions`` versions (lineages of five: four superseded, the head active), each citing
one of ``--sources`` sources, and a retrieval record per lineage. It then times:

- ``start``: ``erasure_start`` (what the 202 waits for: every lineage retired, audited);
- ``worker``: a real ``celery -A config worker --pool=solo`` process running the erasure
  to ``done``; its peak RSS is read from ``/proc/<pid>/status`` (``VmHWM``) before it is
  stopped. Memory is flat in the number of versions: every phase holds one batch of ids.

The load average is printed next to the figures (the machine is shared).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
PER_ITEM = 5
CHUNK = 2000


def build_subject(
    *, tenant: Any, owner: Any, versions: int, sources: int, needle: str = "Bench Person"
) -> str:
    """One subject with ``versions`` versions in lineages of ``PER_ITEM`` (the head active),
    each citing one of ``sources`` sources; one retrieval record per lineage. Rows are
    bulk-inserted (no per-version audit events or checks): the erasure is measured."""
    from django.db import transaction
    from django.utils import timezone

    from memory.models import (
        Entity,
        MemoryItem,
        MemoryVersion,
        RetrievalRecord,
        RetrievalUse,
        Source,
        Status,
    )

    now = timezone.now()
    entity = Entity.objects.create(
        tenant=tenant, kind="customer", name=needle, name_normalized=needle.casefold()
    )
    with transaction.atomic():
        made = Source.objects.bulk_create(
            [
                Source(
                    tenant=tenant,
                    kind="message",
                    content=f"{needle} said message {i}",
                    content_sha256=hashlib.sha256(
                        f"{needle} said message {i}".encode()
                    ).hexdigest(),
                    speaker=needle,
                    metadata={"who": needle},
                    recorded_by="bench",
                )
                for i in range(sources)
            ],
            batch_size=CHUNK,
        )
        source_ids = [s.pk for s in made]
        items = MemoryItem.objects.bulk_create(
            [
                MemoryItem(
                    tenant=tenant,
                    kind="preference",
                    subject=entity,
                    field=f"field_{i}",
                    head_version=PER_ITEM,
                )
                for i in range(max(1, versions // PER_ITEM))
            ],
            batch_size=CHUNK,
        )
        rows: list[MemoryVersion] = []
        n = 0
        for item in items:
            for number in range(1, PER_ITEM + 1):
                head = number == PER_ITEM
                at = now - timedelta(days=PER_ITEM - number + 1)
                rows.append(
                    MemoryVersion(
                        item=item,
                        number=number,
                        tenant=tenant,
                        kind="preference",
                        subject=entity,
                        field=item.field,
                        value=f"{needle} value {n}",
                        statement=f"{needle} statement {n}",
                        scope={},
                        owner=owner,
                        proposed_by="bench",
                        source_ids=[source_ids[n % sources]],
                        status=Status.ACTIVE if head else Status.SUPERSEDED,
                        status_changed_at=at,
                        recorded_at=at,
                        activated_at=at,
                        deactivated_at=None if head else at + timedelta(days=1),
                    )
                )
                n += 1
        made_versions = MemoryVersion.objects.bulk_create(rows, batch_size=CHUNK)
        through = MemoryVersion.sources.through
        through.objects.bulk_create(
            [through(memoryversion_id=v.pk, source_id=v.source_ids[0]) for v in made_versions],
            batch_size=CHUNK,
        )
        records = RetrievalRecord.objects.bulk_create(
            [
                RetrievalRecord(
                    tenant=tenant,
                    task_id=f"task-{i}",
                    principal="agent:bench",
                    policy_version="1",
                    retrieved_at=now,
                )
                for i in range(len(items))
            ],
            batch_size=CHUNK,
        )
        RetrievalUse.objects.bulk_create(
            [
                RetrievalUse(
                    retrieval=record,
                    tenant=tenant,
                    task_id=record.task_id,
                    item=item,
                    version_number=PER_ITEM,
                    field=item.field,
                )
                for record, item in zip(records, items, strict=True)
            ],
            batch_size=CHUNK,
        )
    return str(entity.pk)


def _vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _recreate_database(url: str) -> None:
    name = urlsplit(url).path.lstrip("/")
    admin = urlsplit(url)._replace(path="/postgres").geturl()
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--versions", type=int, default=10_000)
    parser.add_argument("--sources", type=int, default=2_000)
    args = parser.parse_args()
    base = urlsplit(os.environ["DATABASE_URL"])
    name = base.path.lstrip("/")
    url = base._replace(path=f"/{name.removesuffix('_erasure')}_erasure").geturl()
    os.environ["DATABASE_URL"] = url
    _recreate_database(url)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from accounts import tenancy
    from accounts.grants import permission_grant
    from core.principals import principal_for_user
    from memory.erasure import erasure_start
    from memory.models import Erasure

    tenant = tenancy.tenant_create(slug=f"bench-{uuid.uuid4().hex[:6]}")
    officer = tenancy.user_create(
        tenant=tenant, username="officer", password=None, email="officer@example.com", labels=[]
    )
    permission_grant(tenant=tenant, user=officer, codename="erase_subject")
    t0 = time.perf_counter()
    subject = build_subject(
        tenant=tenant, owner=officer, versions=args.versions, sources=args.sources
    )
    built = time.perf_counter() - t0
    principal = principal_for_user(officer)
    assert principal is not None
    load_before = os.getloadavg()

    # Start the worker first: the outbox hands the run to it right after the commit.
    log = ROOT / "var" / "erasure_bench_worker.log"
    log.parent.mkdir(exist_ok=True)
    with log.open("wb") as out:
        worker = subprocess.Popen(
            [
                sys.executable,
                *("-m", "celery", "-A", "config", "worker", "--pool=solo", "--concurrency=1"),
                *("--without-mingle", "--without-gossip", "--loglevel=WARNING"),
                *("-n", f"erasure-bench-{uuid.uuid4().hex[:6]}@%h"),
            ],
            cwd=ROOT,
            env={**os.environ, "EMAIL_URL": "dummy://"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        time.sleep(5)  # the worker connects to the broker
        t1 = time.perf_counter()
        erasure = erasure_start(principal=principal, subject_id=subject, reason="benchmark")
        started = time.perf_counter() - t1
        while True:
            erasure.refresh_from_db()
            if erasure.status != Erasure.Status.RUNNING:
                break
            if worker.poll() is not None:
                raise SystemExit(f"worker died: see {log}")
            time.sleep(0.2)
        total = time.perf_counter() - t1
        peak_kib = _vm_hwm_kib(worker.pid)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    result = {
        "benchmark": "erasure",
        "versions": args.versions,
        "sources": args.sources,
        "lineages": args.versions // PER_ITEM,
        "status": erasure.status,
        "counts": erasure.counts,
        "build_seconds": round(built, 2),
        "start_seconds (202)": round(started, 2),
        "worker_seconds": round(total - started, 2),
        "total_seconds": round(total, 2),
        "worker_peak_rss_mib": round(peak_kib / 1024, 1),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "command": " ".join(sys.argv),
    }
    print(json.dumps(result, indent=2))
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out_dir / f"erasure-{args.versions}-{stamp}.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
