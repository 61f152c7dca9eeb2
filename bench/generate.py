"""Benchmark data: tenants, subjects and memory versions with realistic shape, bulk-loaded
with COPY into the PostgreSQL database named by DATABASE_URL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memgov_bench_1m \\
        .venv/bin/python -m bench.generate generate --versions 1000000 --reset
    DATABASE_URL=… .venv/bin/python -m bench.generate info      # JSON: key, probe subjects
    DATABASE_URL=… .venv/bin/python -m bench.generate explain   # the candidate query's plan

Every subject has the same shape whatever the table size (about 22 versions: six fields,
one to three lineages each, with superseded, retired and expired history, pending
corrections, plans, validity bounds and restricted visibility), so a larger table means
more subjects, not bigger ones: resolve latency should then not depend on table size.

Scope values are derived from the subject's index (``context_for``), so the load generator
can ask each subject a question that some of its versions answer and some do not. The
rows bypass the services (no audit events, no scenario checks): this measures reads.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = "resolve-v1"  # bump when the data shape changes: old databases are regenerated
TENANTS = 4
PROBE_TENANT = "bench-0"
AGENT_LABELS = ["staff"]
FIELDS = (
    "delivery_address",
    "material_checks",
    "quotes_required",
    "payment_terms",
    "contact_channel",
    "shipping_window",
    "approval_limit",
    "language",
)
SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key")


# --- the shape of one subject ----------------------------------------------------------------


def context_for(index: int) -> dict[str, str]:
    """The question the load generator asks about subject ``index`` (task + four ids)."""
    return {
        "task": f"T-{index}-1",
        "project": f"P-{index % 50}",
        "supplier": f"S-{index % 100}",
        "batch": f"B-{index % 20}",
        "customer": f"C-{index}",
    }


def _sibling(dimension: str, index: int) -> str:
    """A value of the same dimension the probe context does not carry (out of scope)."""
    return {
        "task": f"T-{index}-2",
        "project": f"P-{(index + 1) % 50}",
        "supplier": f"S-{(index + 1) % 100}",
        "batch": f"B-{(index + 1) % 20}",
        "customer": f"C-{index + 1}",
    }[dimension]


def _scope(rng: random.Random, kind: str, index: int) -> dict[str, str]:
    """Scopes as the seeds describe them; one in four names a sibling value."""
    own = context_for(index)
    if kind == "preference":
        dims = rng.choice([(), (), ("customer",)])
    elif kind == "task_fact":
        dims = rng.choice([("task",), ("task",), ("task", "project"), ("task", "customer")])
    else:
        dims = rng.choice(
            [
                ("tenant",),
                ("project",),
                ("project", "supplier"),
                ("project", "supplier", "batch"),
                ("supplier",),
            ]
        )
    if dims == ("tenant",):
        return {"tenant": "*"}
    scope = {dim: own[dim] for dim in dims}
    if scope and rng.random() < 0.25:
        dim = rng.choice(sorted(scope))
        scope[dim] = _sibling(dim, index)
    return scope


@dataclass
class Version:
    number: int
    status: str
    value: Any
    recorded_at: datetime
    activated_at: datetime | None
    deactivated_at: datetime | None
    expires_at: datetime | None


@dataclass
class Lineage:
    item_id: str
    kind: str
    field: str
    scope: dict[str, str]
    assertion: str
    verification: str
    valid_from: datetime | None
    valid_to: datetime | None
    visibility: list[list[str]]
    versions: list[Version]


def _expiry(rng: random.Random, kind: str, now: datetime) -> datetime | None:
    if kind == "preference":
        return None if rng.random() < 0.8 else now + timedelta(days=rng.randint(30, 720))
    days = (1, 60) if kind == "task_fact" else (30, 365)
    return now + timedelta(days=rng.randint(*days), seconds=rng.randint(0, 86_400))


def _history(rng: random.Random, kind: str, field: str, now: datetime) -> list[Version]:
    """1 to 4 versions: the older ones superseded, the head active, retired, expired, or a
    correction still in review (or rejected) while the previous version stays in use."""
    count = rng.choices([1, 2, 3, 4], weights=[50, 25, 15, 10])[0]
    start = now - timedelta(days=rng.randint(30, 900))
    recorded = sorted(start + timedelta(seconds=rng.randint(0, 86_400 * 25)) for _ in range(count))
    versions = [
        Version(
            number=n,
            status="superseded",
            value=f"{field} value {n}",
            recorded_at=at,
            activated_at=at + timedelta(minutes=rng.randint(1, 600)),
            deactivated_at=None,
            expires_at=_expiry(rng, kind, now),
        )
        for n, at in enumerate(recorded, start=1)
    ]
    for older, newer in itertools.pairwise(versions):
        older.deactivated_at = newer.activated_at  # one instant for the handover
    head = rng.choices(
        ["active", "retired", "expired", "pending_review", "rejected"], weights=[80, 7, 6, 4, 3]
    )[0]
    last = versions[-1]
    last.status = head
    assert last.activated_at is not None
    ended = last.activated_at + (now - last.activated_at) * rng.random()
    if head == "expired":
        last.expires_at = ended
        last.deactivated_at = ended + timedelta(seconds=30)
    elif head == "retired":
        last.deactivated_at = ended
    elif head in ("pending_review", "rejected"):
        last.activated_at = None
        if count > 1:
            versions[-2].status, versions[-2].deactivated_at = "active", None
    return versions


def subject_lineages(rng: random.Random, index: int, prefix: str, now: datetime) -> list[Lineage]:
    lineages = []
    for f, field in enumerate(rng.sample(FIELDS, 6)):
        for j in range(rng.choices([1, 2, 3], weights=[35, 40, 25])[0]):
            kind = rng.choices(
                ["preference", "task_fact", "enterprise_rule"], weights=[40, 35, 25]
            )[0]
            valid_from = now - timedelta(days=rng.randint(1, 400)) if rng.random() < 0.25 else None
            valid_to = None
            if rng.random() < 0.08:
                valid_to = (valid_from or now - timedelta(days=500)) + timedelta(
                    days=rng.randint(30, 600)
                )
            verification = {
                "preference": "asserted",
                "task_fact": rng.choice(["verified_record", "verified_record", "confirmed"]),
                "enterprise_rule": rng.choice(["confirmed", "confirmed", "verified_record"]),
            }[kind]
            lineages.append(
                Lineage(
                    item_id=f"mem_{prefix}{index:07d}{f}{j}",
                    kind=kind,
                    field=field,
                    scope=_scope(rng, kind, index),
                    assertion="plan" if kind == "preference" and rng.random() < 0.03 else "state",
                    verification=verification,
                    valid_from=valid_from,
                    valid_to=valid_to,
                    visibility=rng.choices(
                        [[["*"]], [["staff"]], [["finance"]]], weights=[85, 10, 5]
                    )[0],
                    versions=_history(rng, kind, field, now),
                )
            )
    return lineages


# --- loading ---------------------------------------------------------------------------------


def _setup_django() -> None:
    import django

    sys.path.insert(0, str(ROOT))
    django.setup()


def _database_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        raise SystemExit("DATABASE_URL must name a PostgreSQL database")
    return url


def ensure_database(url: str, *, reset: bool) -> None:
    """Create the database (dropping it first with ``reset``) through the maintenance db."""
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    admin = urlsplit(url)._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        if reset:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


@dataclass
class Tenants:
    ids: list[int]
    owners: list[int]


def _tenants(versions: int, seed: int) -> Tenants:
    from accounts import tenancy
    from core.models import Tenant

    ids, owners = [], []
    for t in range(TENANTS):
        tenant = tenancy.tenant_create(
            slug=f"bench-{t}", name=f"bench {GENERATOR} versions={versions} seed={seed}"
        )
        owner = tenancy.user_create(
            tenant=tenant, username=f"owner-{t}", password=None, labels=["staff"]
        )
        ids.append(tenant.pk)
        owners.append(owner.pk)
    Tenant.objects.filter(pk__in=ids).update(approvals_required=2)
    return Tenants(ids, owners)


Row = dict[str, Any]
TABLES = ("memory_entity", "memory_source", "memory_memoryitem", "memory_memoryversion")


def _rows(target: int, tenants: Tenants, seed: int, now: datetime) -> Iterator[tuple[str, Row]]:
    """(table, row) in dependency order until ``target`` versions were produced."""
    rng = random.Random(seed)
    produced = 0
    index = 0
    while produced < target:
        t = index % TENANTS
        tenant, owner = tenants.ids[t], tenants.owners[t]
        subject = f"ent_bench{t}_{index:08d}"
        yield "memory_entity", _entity_row(subject, tenant, index, now)
        for lineage in subject_lineages(rng, index, f"b{t}", now):
            if produced >= target:
                break
            versions = lineage.versions[: target - produced]
            produced += len(versions)
            source = f"src_{lineage.item_id[4:]}"
            yield "memory_source", _source_row(lineage, source, tenant, versions[0].recorded_at)
            yield "memory_memoryitem", _item_row(lineage, tenant, subject, versions)
            for v in versions:
                row = _version_row(lineage, v, tenant, subject, owner, source)
                yield "memory_memoryversion", row
        index += 1


def _entity_row(subject: str, tenant: int, index: int, now: datetime) -> Row:
    return {
        "id": subject,
        "tenant_id": tenant,
        "kind": "customer",
        "name": f"Customer {index}",
        "name_normalized": f"customer {index}",
        "external_ref": f"probe:{index}",
        "created_at": now,
        "erased_at": None,
    }


def _item_row(lineage: Lineage, tenant: int, subject: str, versions: list[Version]) -> Row:
    return {
        "id": lineage.item_id,
        "tenant_id": tenant,
        "kind": lineage.kind,
        "subject_id": subject,
        "subject_mention": "",
        "field": lineage.field,
        "head_version": len(versions),
        "created_at": versions[0].recorded_at,
    }


def _source_row(lineage: Lineage, source: str, tenant: int, at: datetime) -> Row:
    return {
        "id": source,
        "tenant_id": tenant,
        "kind": "message",
        "content": f"Evidence for {lineage.field}.",
        "content_sha256": "0" * 64,
        "external_ref": "",
        "version": "",
        "speaker": "",
        "occurred_at": None,
        "received_at": at,
        "visibility": json.dumps(lineage.visibility[0]),
        "metadata": "{}",
        "recorded_by": "agent:bench",
        "revoked_at": None,
        "revoked_reason": "",
    }


def _version_row(
    lineage: Lineage, v: Version, tenant: int, subject: str, owner: int, source: str
) -> Row:
    scope = lineage.scope
    return {
        "item_id": lineage.item_id,
        "number": v.number,
        "tenant_id": tenant,
        "kind": lineage.kind,
        "subject_id": subject,
        "field": lineage.field,
        "value": json.dumps(v.value),
        "statement": f"{lineage.field} is {v.value}",
        "scope": json.dumps(scope),
        "owner_id": owner,
        "proposed_by": "agent:bench",
        "proposer_user_id": None,
        "expires_at": v.expires_at,
        "valid_from": lineage.valid_from,
        "valid_to": lineage.valid_to,
        "assertion": lineage.assertion,
        "verification": lineage.verification,
        "source_ids": json.dumps([source]),
        "required_visibility": json.dumps(lineage.visibility),
        "basis": "{}",
        "visibility": json.dumps(lineage.visibility[0]),
        "required_reviewers": "[]",
        "approvals_required": {"preference": 0, "task_fact": 1}.get(lineage.kind, 2),
        "status": v.status,
        "status_reason": "",
        "status_changed_at": v.deactivated_at or v.activated_at or v.recorded_at,
        "recorded_at": v.recorded_at,
        "activated_at": v.activated_at,
        "deactivated_at": v.deactivated_at,
        "erased_at": None,
    }


def _check_schema() -> None:
    """Fail loudly when a model gained a column this loader does not fill."""
    from django.apps import apps

    epoch = datetime(2025, 1, 1, tzinfo=UTC)
    version = Version(1, "active", 1, epoch, epoch, None, None)
    lineage = Lineage("mem_x", "preference", "f", {}, "state", "asserted", None, None, [["*"]], [])
    samples = {
        "memory_entity": _entity_row("ent_x", 1, 1, epoch),
        "memory_source": _source_row(lineage, "src_x", 1, epoch),
        "memory_memoryitem": _item_row(lineage, 1, "ent_x", [version]),
        "memory_memoryversion": _version_row(lineage, version, 1, "ent_x", 1, "src_x"),
    }
    for model in apps.get_app_config("memory").get_models():
        if model._meta.db_table in samples:
            columns = {str(f.column) for f in model._meta.concrete_fields}
            filled = set(samples[model._meta.db_table]) | {"id"}
            if columns != filled:
                raise SystemExit(f"{model.__name__} columns changed: {sorted(columns ^ filled)}")


def load(target: int, seed: int) -> dict[str, Any]:
    """Generate and COPY in batches, parents before children, one commit per batch."""
    import psycopg
    from django.core.management import call_command
    from django.utils import timezone

    _check_schema()
    call_command("migrate", verbosity=0)
    started = time.monotonic()
    tenants = _tenants(target, seed)
    now = timezone.now()
    spools: dict[str, list[Row]] = {name: [] for name in TABLES}
    counts = dict.fromkeys(TABLES, 0)
    with psycopg.connect(_database_url()) as conn:
        for name, row in _rows(target, tenants, seed, now):
            spools[name].append(row)
            if len(spools["memory_memoryversion"]) >= 50_000:
                _flush(conn, spools, counts)
        _flush(conn, spools, counts)
        conn.execute(
            "INSERT INTO memory_memoryversion_sources (memoryversion_id, source_id) "
            "SELECT id, source_ids->>0 FROM memory_memoryversion"
        )
        conn.execute(
            "INSERT INTO memory_scopevalue (tenant_id, dimension, value) "
            "SELECT DISTINCT tenant_id, d.key, d.value FROM memory_memoryversion, "
            "jsonb_each_text(scope) AS d WHERE d.key <> 'tenant' ON CONFLICT DO NOTHING"
        )
        conn.commit()
    _analyze()
    return {
        "versions": counts["memory_memoryversion"],
        "subjects": counts["memory_entity"],
        "seconds": round(time.monotonic() - started, 1),
    }


def _flush(conn: Any, spools: dict[str, list[Row]], counts: dict[str, int]) -> None:
    for table in TABLES:
        rows = spools[table]
        if not rows:
            continue
        columns = list(rows[0])
        with conn.cursor().copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([row[c] for c in columns])
        counts[table] += len(rows)
        rows.clear()
    conn.commit()


def _analyze() -> None:
    import psycopg

    with psycopg.connect(_database_url(), autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")


# --- what the benchmark needs ----------------------------------------------------------------


def info(probes: int) -> dict[str, Any]:
    """What was generated, a fresh agent key of the probe tenant, and probe subjects."""
    from django.core.management import call_command
    from django.db import connection
    from django.db.models import Count, Q

    from accounts import tenancy
    from core.models import Tenant
    from memory.models import Entity, MemoryVersion

    if "memory_tenant" not in connection.introspection.table_names():
        return {"generator": None}
    # A database generated before a later migration is brought up to date, as an
    # operator's upgrade would, rather than measured against an older schema.
    call_command("migrate", verbosity=0)
    tenant = Tenant.objects.filter(slug=PROBE_TENANT).first()
    if tenant is None:
        return {"generator": None}
    _, raw = tenancy.api_key_create(tenant=tenant, agent_name="bench", labels=AGENT_LABELS)
    rng = random.Random(7)
    ids = list(Entity.objects.filter(tenant=tenant).values_list("pk", "external_ref"))
    chosen = rng.sample(ids, min(probes, len(ids)))
    subjects = [{"id": pk, "index": int(ref.split(":")[1])} for pk, ref in chosen]
    active = (
        MemoryVersion.objects.filter(subject_id__in=[s["id"] for s in subjects[:100]])
        .values("subject_id")
        .annotate(all=Count("id"), active=Count("id", filter=Q(status="active")))
    )
    return {
        "generator": tenant.name,
        "versions": MemoryVersion.objects.count(),
        "key": raw,
        "subjects": subjects,
        "versions_per_subject": _spread([row["all"] for row in active]),
        "active_per_subject": _spread([row["active"] for row in active]),
    }


def _spread(values: list[int]) -> dict[str, float]:
    values = sorted(values) or [0]
    return {"min": values[0], "median": values[len(values) // 2], "max": values[-1]}


def explain(subject: str, index: int) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the exact queryset resolve runs for a probe subject."""
    from django.utils import timezone

    from core.models import Tenant
    from memory.candidates import CandidateRequest, candidate_queryset

    tenant = Tenant.objects.get(slug=PROBE_TENANT)
    request = CandidateRequest(
        tenant_id=tenant.pk,
        subject_id=subject,
        fields=None,
        context=context_for(index),
        known_at=timezone.now(),
        with_policy=True,  # as ``memory.resolution.decide`` asks
    )
    queryset = candidate_queryset(request)
    list(queryset)  # warm, as a server that has answered before would be
    return str(queryset.explain(analyze=True, buffers=True))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="create (or --reset) the database and load it")
    gen.add_argument("--versions", type=lambda s: SIZES.get(s) or int(s), required=True)
    gen.add_argument("--seed", type=int, default=42)
    gen.add_argument("--reset", action="store_true", help="drop and recreate the database")
    show = sub.add_parser("info", help="print JSON: generator, key, probe subjects")
    show.add_argument("--probes", type=int, default=500)
    plan = sub.add_parser("explain", help="print the candidate query's plan for a probe subject")
    plan.add_argument("--subject")
    plan.add_argument("--index", type=int)
    args = parser.parse_args(argv)

    url = _database_url()
    if args.command == "generate":
        ensure_database(url, reset=args.reset)
        _setup_django()
        print(json.dumps(load(args.versions, args.seed)))
    elif args.command == "info":
        ensure_database(url, reset=False)
        _setup_django()
        print(json.dumps(info(args.probes)))
    else:
        _setup_django()
        print(explain(args.subject, args.index))


if __name__ == "__main__":
    main()
