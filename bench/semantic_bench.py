"""Semantic retrieval's costs (issue 45) on ``bench.generate``'s PostgreSQL data: how fast
the worker embeds, and vectors for a whole generated database so that
``bench.search_bench`` measures search with the query's embedding at that size.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memgov_bench \\
        .venv/bin/python -m bench.semantic_bench throughput --size 10k [--versions 2000]
    DATABASE_URL=… .venv/bin/python -m bench.semantic_bench fill --size 1m
    DATABASE_URL=… .venv/bin/python -m bench.search_bench --size 1m

``throughput``: the probe tenant's first ``--versions`` versions lose their vectors and
are embedded again by ``memory.semantic.embed_versions`` — what the worker's task runs —
with torch on ``--threads`` threads (2: the machine's two cores, one worker child);
versions per second, the load average beside it. Target: ≥ 200 versions/s on 2 cores.

``fill``: every version and entity of the database gets a vector of the configured
model and the model's HNSW index is built once at the end (building it as rows arrive
is slower). The probe tenant's entities and the versions of the subjects
``bench.search_bench`` asks about get their real embedding; every other row a random
unit-scale vector made in SQL (embedding a million texts would take the better part of
an hour and measures nothing more: an HNSW read walks the graph whatever the vectors
mean, and random vectors are near nothing, so the filters and the floor do all the
work — the slow case). Prints how long each step took.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from typing import Any

from bench.reports import report_path

THROUGHPUT_TARGET = 200.0  # versions per second on the worker, 2 cores


def _setup(size: str, threads: int) -> str:
    from bench import one_client

    _, url = one_client.arguments("", ["--size", size])
    os.environ["MEMGOV_EMBEDDING_THREADS"] = str(threads)
    one_client.setup(url)
    return url


def _probe_tenant() -> Any:
    from bench.generate import PROBE_TENANT
    from core.models import Tenant

    return Tenant.objects.get(slug=PROBE_TENANT)


def throughput(versions: int) -> dict[str, Any]:
    from memory import embeddings, semantic
    from memory.models import Embedding, MemoryVersion

    model = semantic.model()
    if model is None:
        raise SystemExit("semantic retrieval is off here: install the extra, run migrate")
    ids = list(
        MemoryVersion.objects.filter(tenant=_probe_tenant(), erased_at__isnull=True)
        .order_by("pk")
        .values_list("pk", flat=True)[:versions]
    )
    embeddings.embed(model, ["warm up: the model loads once per process"])
    Embedding.objects.filter(version_id__in=ids, model=model.name).delete()
    load = os.getloadavg()
    started = time.perf_counter()
    done = 0
    for start in range(0, len(ids), semantic.CHUNK):
        done += semantic.embed_versions(ids[start : start + semantic.CHUNK])
    took = time.perf_counter() - started
    rate = done / took
    return {
        "versions": done,
        "seconds": round(took, 2),
        "versions_per_second": round(rate, 1),
        "target": THROUGHPUT_TARGET,
        "met": rate >= THROUGHPUT_TARGET,
        "load_average_before": [round(x, 2) for x in load],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def fill() -> dict[str, Any]:
    from django.db import connection

    from bench.search_bench import PROBES
    from memory import semantic, vectors
    from memory.models import Embedding, Entity, MemoryVersion

    model = semantic.model()
    if model is None:
        raise SystemExit("semantic retrieval is off here: install the extra, run migrate")
    steps: dict[str, float] = {}
    tenant = _probe_tenant()
    index = vectors.index_name(model)
    with connection.cursor() as cursor:
        for made in (index, f"{index}_versions", f"{index}_entities"):
            cursor.execute(f"DROP INDEX IF EXISTS {made}")

    started = time.perf_counter()
    subjects = list(
        Entity.objects.filter(tenant=tenant).order_by("pk").values_list("pk", flat=True)
    )
    semantic.embed_entities(subjects)
    # search_bench samples its probe subjects from these with its seed: embed all their
    # versions for real (a superset of the sample, so any seed is covered at 10k/100k).
    asked = subjects[: max(PROBES * 5, 1000)]
    version_ids = list(
        MemoryVersion.objects.filter(subject_id__in=asked).values_list("pk", flat=True)
    )
    for start in range(0, len(version_ids), semantic.CHUNK):
        semantic.embed_versions(version_ids[start : start + semantic.CHUNK])
    steps["real_embeddings_s"] = round(time.perf_counter() - started, 1)
    real = Embedding.objects.filter(model=model.name).count()

    started = time.perf_counter()
    literal = vectors.model_literal(model)
    with connection.cursor() as cursor:
        for table, column in (
            ("memory_memoryversion", "version_id"),
            ("memory_entity", "entity_id"),
        ):
            # The correlated WHERE makes PostgreSQL draw new numbers for every row.
            cursor.execute(
                f"INSERT INTO {vectors.TABLE} (tenant_id, {column}, model, digest, embedded_at, "
                f"vec) SELECT t.tenant_id, t.id, {literal}, 'synthetic', now(), "
                f"(SELECT array_agg(random() - 0.5) FROM generate_series(1, {model.dimensions}) "
                f"WHERE t.id IS NOT NULL)::vector FROM {table} t WHERE NOT EXISTS "
                f"(SELECT 1 FROM {vectors.TABLE} m WHERE m.{column} = t.id AND m.model = {literal})"
            )
    steps["synthetic_vectors_s"] = round(time.perf_counter() - started, 1)

    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '2GB'")
        cursor.execute("SET max_parallel_maintenance_workers = 1")
    vectors.ensure_index(model, connection)
    steps["hnsw_index_s"] = round(time.perf_counter() - started, 1)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {vectors.TABLE}")
    return {"real_vectors": real, "vectors": Embedding.objects.count(), **steps}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("command", choices=("throughput", "fill"))
    parser.add_argument("--size", default="10k")
    parser.add_argument("--versions", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    url = _setup(args.size, args.threads)
    result = throughput(args.versions) if args.command == "throughput" else fill()
    print(json.dumps(result, indent=2))
    written = {
        "benchmark": f"semantic_{args.command}",
        "database": url.rsplit("/", 1)[-1],
        "threads": args.threads,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        **result,
    }
    out = report_path(f"semantic_{args.command}")
    out.write_text(json.dumps(written, indent=2) + "\n")
    print(f"({out})")


if __name__ == "__main__":
    main()
