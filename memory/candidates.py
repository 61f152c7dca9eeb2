"""The resolver's input: the versions of one subject that could answer, in one query.

Scenario checks call the same function with ``include`` (the version under check, as if it
were active), ``exclude_item`` (its lineage's other versions) and ``revoked_sources`` (as if
its basis were revoked), so what is checked goes through the same filters agents get."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Field, IntegerField, Q, QuerySet, TextField
from django.db.models.expressions import RawSQL

from memory import resolver
from memory.models import OPEN_STATUSES, MemoryVersion

_CANDIDATE_COLUMNS = (
    "id",
    "item_id",
    "number",
    "kind",
    "field",
    "value",
    "statement",
    "scope",
    "verification",
    "assertion",
    "valid_from",
    "valid_to",
    "expires_at",
    "activated_at",
    "deactivated_at",
    "source_ids",
    "basis",
    "required_visibility",
)

# "A newer version of the same item is still open": the active version is in use while its
# correction is reviewed or checked (``pending_correction``). Written out rather than as
# ``Exists(...)``: the ORM spent about half a millisecond building that subquery on every
# resolve, as long as the rest of the query. The outer row is Django's base table alias.
_PENDING_CORRECTION = RawSQL(
    'EXISTS (SELECT 1 FROM "memory_memoryversion" "newer" '
    'WHERE "newer"."item_id" = "memory_memoryversion"."item_id" '
    'AND "newer"."number" > "memory_memoryversion"."number" '
    'AND "newer"."status" IN (%s, %s, %s, %s))',
    [str(status) for status in OPEN_STATUSES],
    output_field=BooleanField(),
)

# The tenant's current policy, read by the same statement as the candidates: a resolve is
# then one round trip to the database instead of two (each row carries the same two values;
# PostgreSQL evaluates an uncorrelated subquery once).
_POLICY_VERSION = (
    '(SELECT "version" FROM "memory_policy" WHERE "tenant_id" = %s ORDER BY "version" DESC LIMIT 1)'
)
_POLICY_PRECEDENCE = (
    '(SELECT CAST("precedence" AS text) FROM "memory_policy" WHERE "tenant_id" = %s '
    'ORDER BY "version" DESC LIMIT 1)'
)


def _latest_policy(sql: str, tenant_id: int, output: Field[Any, Any]) -> RawSQL:
    return RawSQL(sql, [tenant_id], output_field=output)  # noqa: S611 - constant SQL, bound id


@dataclass(frozen=True)
class CurrentPolicy:
    version: int
    precedence: Mapping[str, Any]


@dataclass(frozen=True)
class CandidateRequest:
    tenant_id: int
    subject_id: str
    fields: tuple[str, ...] | None
    context: Mapping[str, str]
    known_at: datetime
    # With explain, out-of-scope versions are fetched too, to be listed.
    prefilter: bool = True
    include: int | None = None
    exclude_item: str | None = None
    exclude_version: int | None = None
    revoked_sources: Collection[str] = field(default_factory=tuple)
    # The revocation spares this lineage's versions other than ``include``: the revoked
    # scenario asks what resolves when the new version loses its basis, and the still
    # active predecessor is the fallback (approvals/checks.py).
    revocation_spares_item: str | None = None
    # Also read the tenant's current policy (see ``load_candidates_and_policy``).
    with_policy: bool = False


def _in_use(known_at: datetime) -> Q:
    return Q(activated_at__lte=known_at) & (
        Q(deactivated_at__isnull=True) | Q(deactivated_at__gt=known_at)
    )


def _scope_within(context: Mapping[str, str]) -> Q:
    """``scope <@ context`` (or tenant-wide) in SQL on PostgreSQL, evaluated on the rows the
    (tenant, subject, field) index found; elsewhere the resolver's own test does it."""
    if connection.vendor != "postgresql":
        return Q()
    return Q(scope__contained_by=dict(context)) | Q(scope={"tenant": "*"})


def candidate_queryset(request: CandidateRequest) -> QuerySet[MemoryVersion, Any]:
    """Rows (named tuples) in no particular order: the resolver's answer never depends on
    the order of its input, so the database is not asked to sort."""
    in_use = _in_use(request.known_at)
    if request.exclude_item:
        in_use &= ~Q(item_id=request.exclude_item)
    if request.exclude_version is not None:
        in_use &= ~Q(pk=request.exclude_version)
    if request.include is not None:
        in_use |= Q(pk=request.include)
    rows = MemoryVersion.objects.filter(
        in_use, tenant_id=request.tenant_id, subject_id=request.subject_id
    )
    if request.fields:
        rows = rows.filter(field__in=request.fields)
    if request.prefilter:
        # Expired versions are not filtered here: the resolver needs them to abstain with
        # "has expired" (and not "nothing applies"), the same answer explain gives. Few exist:
        # the expiry task ends their use within a minute.
        rows = rows.filter(_scope_within(request.context))
    if request.revoked_sources:
        hit = Q(sources__in=list(request.revoked_sources))
        if request.revocation_spares_item:
            hit &= ~Q(item_id=request.revocation_spares_item) | Q(pk=request.include)
        rows = rows.exclude(hit)
    rows = rows.annotate(pending=_PENDING_CORRECTION)
    columns = [*_CANDIDATE_COLUMNS, "pending"]
    if request.with_policy:
        rows = rows.annotate(
            policy_version=_latest_policy(_POLICY_VERSION, request.tenant_id, IntegerField()),
            policy_precedence=_latest_policy(_POLICY_PRECEDENCE, request.tenant_id, TextField()),
        )
        columns += ["policy_version", "policy_precedence"]
    return rows.order_by().values_list(*columns, named=True)


def to_candidate(row: Any, known_at: datetime, include: int | None) -> resolver.Candidate:
    activated_at = row.activated_at
    deactivated_at = row.deactivated_at
    if row.id == include:  # the version under check, as if activated just before known_at
        activated_at, deactivated_at = known_at - timedelta(microseconds=1), None
    return resolver.Candidate(
        memory_id=row.item_id,
        version=row.number,
        kind=row.kind,
        field=row.field,
        value=row.value,
        statement=row.statement,
        scope=row.scope,
        verification=row.verification,
        assertion=row.assertion,
        valid_from=row.valid_from,
        valid_to=row.valid_to,
        expires_at=row.expires_at,
        activated_at=activated_at,
        deactivated_at=deactivated_at,
        source_ids=tuple(row.source_ids),
        basis=row.basis,
        visibility=tuple(frozenset(labels) for labels in row.required_visibility),
        pending_correction=bool(row.pending),
    )


def load_candidates(request: CandidateRequest) -> list[resolver.Candidate]:
    return [
        to_candidate(row, request.known_at, request.include) for row in candidate_queryset(request)
    ]


def load_candidates_and_policy(
    request: CandidateRequest,
) -> tuple[list[resolver.Candidate], CurrentPolicy | None]:
    """The candidates and the tenant's current policy from one statement; the policy is
    None when no candidate came back (the caller then reads it on its own)."""
    rows = list(candidate_queryset(replace(request, with_policy=True)))
    candidates = [to_candidate(row, request.known_at, request.include) for row in rows]
    if not rows:
        return candidates, None
    return candidates, CurrentPolicy(
        version=rows[0].policy_version, precedence=json.loads(rows[0].policy_precedence)
    )
