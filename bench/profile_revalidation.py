"""Revalidation chunks in this process: CPU and wall time an item, split over the pieces of a
chunk, and optionally a cProfile of them. What ``bench.revalidation_bench`` measures with a
real worker, taken apart.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memgov_speed \\
    REDIS_URL=redis://127.0.0.1:6379/10 \\
        .venv/bin/python -m bench.profile_revalidation [--chunks 40] [--profile 30]

Copies ``<DATABASE_URL>_100k`` (``bench.generate``'s data) to ``<DATABASE_URL>_revprof``,
records a revalidation job over every active version of its busiest tenant (set to
``flag``, as the worker benchmark does; the job row only, nothing enqueued), runs one
chunk to warm up, then ``--chunks`` chunks of ``approvals.revalidation.CHUNK`` versions
through ``revalidation_chunk``, as the worker's task does. The copy is dropped after.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from bench.generate import SIZES
from bench.revalidation_bench import (
    _drop_database,
    _size_url,
    busiest_tenant_flagging,
    django_on_copy,
)


def _timed(owner: Any, name: str, label: str, spent: dict[str, list[float]]) -> None:
    """Wrap ``owner.name`` (where its callers look it up) so that its wall and CPU time
    add up under ``label``."""
    wrapped: Callable[..., Any] = getattr(owner, name)

    def timing(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return wrapped(*args, **kwargs)
        finally:
            spent[label][0] += time.perf_counter() - wall
            spent[label][1] += time.process_time() - cpu

    setattr(owner, name, timing)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=40)
    parser.add_argument("--profile", type=int, default=0, help="print the top N functions")
    args = parser.parse_args(argv)
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memgov_bench")
    copy = django_on_copy(_size_url(base, "100k"), _size_url(base, "revprof"), SIZES["100k"])
    tenant = busiest_tenant_flagging()
    from django.db import connections
    from django.db.models import QuerySet
    from django.utils import timezone

    from approvals import checking, revalidation
    from approvals.models import Revalidation
    from memory.models import MemoryVersion

    ids = list(
        MemoryVersion.objects.filter(tenant=tenant, status="active")
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    now = timezone.now()
    job = Revalidation.objects.create(
        tenant=tenant,
        reason="bench: profile",
        policy_version="1",
        total=len(ids),
        version_ids=ids,
        started_by="bench",
        started_at=now,
        progress_at=now,
    )
    size = revalidation.CHUNK
    chunks = [ids[i : i + size] for i in range(0, len(ids), size)][: args.chunks + 1]
    revalidation.revalidation_chunk(job_id=job.pk, version_ids=chunks[0])  # warm-up
    spent: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    pieces = (
        (checking, "evaluate_current", "evaluate (scenarios)"),
        (checking, "record_many", "record (its writes)"),
        (QuerySet, "bulk_create", "  bulk inserts"),
        (checking, "audit_append_many", "  audit append"),
        (Revalidation, "save", "job progress saved"),
    )
    for owner, name, label in pieces:
        _timed(owner, name, label, spent)
    profile = cProfile.Profile() if args.profile else None
    wall, cpu = time.perf_counter(), time.process_time()
    if profile is not None:
        profile.enable()
    for chunk in chunks[1:]:
        revalidation.revalidation_chunk(job_id=job.pk, version_ids=chunk)
    if profile is not None:
        profile.disable()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    items = sum(len(chunk) for chunk in chunks[1:])
    print(
        f"{items} items in {len(chunks) - 1} chunks: {items / wall:.0f} items/s in one process, "
        f"{1000 * cpu / items:.2f} ms CPU and {1000 * wall / items:.2f} ms wall an item "
        f"(load average {os.getloadavg()[0]:.2f}{', under cProfile' if profile else ''})"
    )
    for _, _, label in pieces:
        piece_wall, piece_cpu = spent[label]
        print(
            f"  {label:20s} {1000 * piece_cpu / items:6.2f} ms CPU, "
            f"{1000 * piece_wall / items:6.2f} ms wall an item"
        )
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.profile)
    connections.close_all()
    _drop_database(copy)


if __name__ == "__main__":
    main()
