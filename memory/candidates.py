"""The resolver's input: the versions of one subject that could answer, in one query.

Scenario checks call the same function with ``include`` (the version under check, as if it
were active), ``exclude_item`` (its lineage's other versions) and ``revoked_sources`` (as if
its basis were revoked), so what is checked goes through the same filters agents get."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet

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


@dataclass(frozen=True)
class CandidateRequest:
    tenant_id: int
    subject_id: str
    fields: tuple[str, ...] | None
    context: Mapping[str, str]
    known_at: datetime
    # With explain, out-of-scope and expired versions are fetched too, to be listed.
    prefilter: bool = True
    include: int | None = None
    exclude_item: str | None = None
    revoked_sources: Collection[str] = field(default_factory=tuple)


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


def candidate_queryset(request: CandidateRequest) -> QuerySet[MemoryVersion]:
    in_use = _in_use(request.known_at)
    if request.exclude_item:
        in_use &= ~Q(item_id=request.exclude_item)
    if request.include is not None:
        in_use |= Q(pk=request.include)
    rows = MemoryVersion.objects.filter(
        in_use, tenant_id=request.tenant_id, subject_id=request.subject_id
    )
    if request.fields:
        rows = rows.filter(field__in=request.fields)
    if request.prefilter:
        rows = rows.filter(_scope_within(request.context)).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=request.known_at)
        )
    if request.revoked_sources:
        rows = rows.exclude(sources__in=list(request.revoked_sources))
    newer_open = MemoryVersion.objects.filter(
        item_id=OuterRef("item_id"), number__gt=OuterRef("number"), status__in=OPEN_STATUSES
    )
    return rows.annotate(pending=Exists(newer_open)).only(*_CANDIDATE_COLUMNS)


def to_candidate(row: MemoryVersion, known_at: datetime, include: int | None) -> resolver.Candidate:
    activated_at = row.activated_at
    deactivated_at = row.deactivated_at
    if row.pk == include:  # the version under check, as if activated just before known_at
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
        pending_correction=bool(getattr(row, "pending", False)),
    )


def load_candidates(request: CandidateRequest) -> list[resolver.Candidate]:
    return [
        to_candidate(row, request.known_at, request.include) for row in candidate_queryset(request)
    ]
