"""The resolver's input: the versions of one subject that could answer, in one query.

Scenario checks call the same function with ``include`` (the version under check, as if it
were active), ``exclude_item`` (its lineage's other versions) and ``revoked_sources`` (as if
its basis were revoked), so what is checked goes through the same filters agents get."""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import orjson
from django.db import connection
from django.db.models import BooleanField, Field, IntegerField, Q, QuerySet, TextField
from django.db.models.expressions import RawSQL

from core.sql import bound_on_server, json_loads, on_postgresql, placeholders
from memory import resolver
from memory.models import OPEN_STATUSES, MemoryVersion

_SCALAR_COLUMNS = (
    "id",
    "item_id",
    "number",
    "kind",
    "field",
    "statement",
    "verification",
    "assertion",
    "valid_from",
    "valid_to",
    "expires_at",
    "activated_at",
    "deactivated_at",
)
_JSON_COLUMNS = ("value", "scope", "source_ids", "basis", "required_visibility")
_CANDIDATE_COLUMNS = (*_SCALAR_COLUMNS, *_JSON_COLUMNS)
# The JSON columns as one array: decoding a row's five values one by one was a tenth of a
# cold resolve, most of it the calls themselves; one document per row is one call.
_JSON_ARRAY = ", ".join(f'v."{column}"' for column in _JSON_COLUMNS)
_SELECT = ", ".join(f'v."{column}"' for column in _SCALAR_COLUMNS) + (
    f", CAST(json_build_array({_JSON_ARRAY}) AS text)"
)
_JSON_AT = len(_SCALAR_COLUMNS)

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


# The tenant's fields with an authoritative system (field catalog), read with the policy by
# the same statement: {field: [name, url, tool]} as JSON text (NULL or "{}" when none).
_AUTHORITIES = (
    '(SELECT CAST(json_object_agg(f."name", json_build_array(f."authority_name", '
    'f."authority_url", f."authority_tool")) AS text) FROM "memory_fielddefinition" f '
    'WHERE f."tenant_id" = %s AND f."authority_name" <> \'\')'
)
_AUTHORITIES_SQLITE = (
    '(SELECT json_group_object(f."name", json_array(f."authority_name", f."authority_url", '
    'f."authority_tool")) FROM "memory_fielddefinition" f '
    'WHERE f."tenant_id" = %s AND f."authority_name" <> \'\')'
)


def _latest_policy(sql: str, tenant_id: int, output: Field[Any, Any]) -> RawSQL:
    return RawSQL(sql, [tenant_id], output_field=output)  # noqa: S611 - constant SQL, bound id


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
    # Also read the tenant's current policy (see ``load_candidates_policy_and_authorities``).
    with_policy: bool = False


def _in_use(known_at: datetime) -> Q:
    return Q(activated_at__lte=known_at) & (
        Q(deactivated_at__isnull=True) | Q(deactivated_at__gt=known_at)
    )


def _scope_within(context: Mapping[str, str]) -> Q:
    """``scope <@ context`` (or tenant-wide) in SQL on PostgreSQL, evaluated on the rows the
    (tenant, subject, field) index found; elsewhere the resolver's own test does it."""
    if not on_postgresql():
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
            authorities=_latest_policy(
                _AUTHORITIES if on_postgresql() else _AUTHORITIES_SQLITE,
                request.tenant_id,
                TextField(),
            ),
        )
        columns += ["policy_version", "policy_precedence", "authorities"]
    return rows.order_by().values_list(*columns, named=True)


class _Draft:
    """A ``resolver.Candidate`` being filled in: its very slots, writable. The frozen
    dataclass's ``__init__`` sets each of its eighteen fields through
    ``object.__setattr__``, a tenth of a cold resolve's instructions (42,000 a row, against
    10,000 this way); a draft is filled by plain assignment, then becomes the frozen
    ``Candidate`` by taking its class, which CPython allows between classes of one layout
    (the same slots on the same base). tests/unit/test_candidate_rows.py holds the two
    to the same fields and values."""

    __slots__ = resolver.Candidate.__slots__


def to_candidate(row: Any, known_at: datetime, include: int | None) -> resolver.Candidate:
    c: Any = _Draft()
    c.memory_id = row.item_id
    c.version = row.number
    c.kind = row.kind
    c.field = row.field
    c.value = row.value
    c.statement = row.statement
    c.scope = row.scope
    c.verification = row.verification
    c.assertion = row.assertion
    c.valid_from = row.valid_from
    c.valid_to = row.valid_to
    c.expires_at = row.expires_at
    if row.id == include:  # the version under check, as if activated just before known_at
        c.activated_at, c.deactivated_at = known_at - timedelta(microseconds=1), None
    else:
        c.activated_at, c.deactivated_at = row.activated_at, row.deactivated_at
    c.source_ids = tuple(row.source_ids)
    c.basis = row.basis
    c.visibility = tuple(map(frozenset, row.required_visibility))
    c.pending_correction = bool(row.pending)
    c.__class__ = resolver.Candidate
    return c  # type: ignore[no-any-return]


def candidate_sql(request: CandidateRequest) -> tuple[str, list[Any]]:
    """The statement ``candidate_queryset`` compiles to on PostgreSQL, written out: the
    ORM spent longer building and decoding it (about 3 ms a resolve) than PostgreSQL
    spends running it (0.15 ms). Same filters, same columns, same order of columns; the
    property tests in tests/resolve compare both on random requests."""
    params: list[Any] = [request.known_at, request.known_at]
    in_use = 'v."activated_at" <= %s AND (v."deactivated_at" IS NULL OR v."deactivated_at" > %s)'
    if request.exclude_item:
        in_use += ' AND v."item_id" <> %s'
        params.append(request.exclude_item)
    if request.exclude_version is not None:
        in_use += ' AND v."id" <> %s'
        params.append(request.exclude_version)
    where = f"(({in_use})"
    if request.include is not None:
        where += ' OR v."id" = %s'
        params.append(request.include)
    where += ') AND v."tenant_id" = %s AND v."subject_id" = %s'
    params += [request.tenant_id, request.subject_id]
    if request.fields:
        where += f' AND v."field" IN ({placeholders(request.fields)})'
        params += request.fields
    if request.prefilter:
        where += ' AND (v."scope" <@ %s::jsonb OR v."scope" = \'{"tenant": "*"}\'::jsonb)'
        params.append(orjson.dumps(dict(request.context)).decode())
    if request.revoked_sources:
        revoked = placeholders(request.revoked_sources)
        hit = (
            'EXISTS (SELECT 1 FROM "memory_memoryversion_sources" s '  # noqa: S608 - placeholders
            f'WHERE s."memoryversion_id" = v."id" AND s."source_id" IN ({revoked}))'
        )
        params += request.revoked_sources
        if request.revocation_spares_item:
            spared = 'v."item_id" <> %s'
            params.append(request.revocation_spares_item)
            if request.include is not None:
                spared = f'({spared} OR v."id" = %s)'
                params.append(request.include)
            hit = f"{hit} AND {spared}"
        where += f" AND NOT ({hit})"
    policy = ""
    head: list[Any] = list(_OPEN)
    if request.with_policy:
        policy = f", {_POLICY_VERSION}, {_POLICY_PRECEDENCE}, {_AUTHORITIES}"
        head += [request.tenant_id] * 3
    # The subqueries come first in the SELECT list: their parameters precede WHERE's.
    sql = (
        f"SELECT {_SELECT}, {_PENDING_SQL}{policy} "  # noqa: S608 - constant SQL, bound values
        f'FROM "memory_memoryversion" v WHERE {where}'
    )
    return sql, head + params


_OPEN = [str(status) for status in OPEN_STATUSES]
_PENDING_SQL = (
    'EXISTS (SELECT 1 FROM "memory_memoryversion" "newer" '
    'WHERE "newer"."item_id" = v."item_id" AND "newer"."number" > v."number" '
    'AND "newer"."status" IN (%s, %s, %s, %s))'
)


class _Row(NamedTuple):
    """A raw row under the names ``to_candidate`` reads (JSON columns decoded). A named
    tuple, as the ORM's rows are: a frozen dataclass set its 22 fields one by one, a
    tenth of a cold resolve."""

    id: int
    item_id: str
    number: int
    kind: str
    field: str
    statement: str
    verification: str
    assertion: str
    valid_from: datetime | None
    valid_to: datetime | None
    expires_at: datetime | None
    activated_at: datetime | None
    deactivated_at: datetime | None
    value: Any
    scope: Any
    source_ids: Any
    basis: Any
    required_visibility: Any
    pending: bool
    policy_version: int | None = None
    policy_precedence: str | None = None
    authorities: str | None = None


def candidate_rows(request: CandidateRequest) -> list[Any]:
    """The candidate rows: one raw statement on PostgreSQL, the ORM's queryset elsewhere.
    SQLite has no ``<@``: the same scope filter is applied to its rows here, since a field
    whose only versions are out of scope must be absent on both backends, not an
    abstention on one (issue 44: an [ask] on SQLite, "nothing applies" on PostgreSQL)."""
    if not on_postgresql():
        rows = list(candidate_queryset(request))
        if not request.prefilter:
            return rows
        return [row for row in rows if _contained(row.scope, request.context)]
    sql, params = candidate_sql(request)
    with bound_on_server(), connection.cursor() as cursor:  # prepared once run often
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    return [_decoded(raw) for raw in fetched]


def _decoded(raw: Sequence[Any]) -> _Row:
    """A fetched candidate row with its JSON array (``_SELECT``, as text: orjson reads it
    faster than psycopg's loader) spread over the five columns it holds."""
    values = json_loads(raw[_JSON_AT])
    return _Row(*raw[:_JSON_AT], *values, *raw[_JSON_AT + 1 :])


def _pool_rows(
    tenant_id: int, where: str, params: list[Any]
) -> list[tuple[str, tuple[Any, frozenset[str]]]]:
    """Every version of the tenant matching ``where`` (over ``v``), decoded, with its
    subject and the ids of the sources it cites."""
    sql = (
        f"SELECT {_SELECT}, {_PENDING_SQL}, "  # noqa: S608 - constant SQL, bound values
        'ARRAY(SELECT s."source_id" FROM "memory_memoryversion_sources" s '
        'WHERE s."memoryversion_id" = v."id"), v."subject_id" '
        'FROM "memory_memoryversion" v '
        f'WHERE v."tenant_id" = %s AND {where}'
    )
    with bound_on_server(), connection.cursor() as cursor:  # prepared once run often
        cursor.execute(sql, [*_OPEN, tenant_id, *params])
        fetched = cursor.fetchall()
    return [(str(raw[-1]), (_decoded(raw[:-2]), frozenset(raw[-2]))) for raw in fetched]


@dataclass(frozen=True)
class CandidatePool:
    """Every version of one (tenant, subject, field set), read once, with the sources it
    cites: scenario checks ask it the questions they would ask ``load_candidates`` (a
    handful per version checked), and it answers with the same filters, in memory.
    ``matches`` is ``candidate_sql``'s WHERE clause; tests/resolve compares the two."""

    tenant_id: int
    subject_id: str
    fields: tuple[str, ...]
    rows: tuple[tuple[Any, frozenset[str]], ...]  # (row, ids of the sources it cites)

    @classmethod
    def load(cls, tenant_id: int, subject_id: str, fields: tuple[str, ...]) -> CandidatePool:
        rows = _pool_rows(
            tenant_id,
            f'v."subject_id" = %s AND v."field" IN ({placeholders(fields)})',
            [subject_id, *fields],
        )
        return cls(tenant_id, subject_id, tuple(fields), tuple(row for _, row in rows))

    @classmethod
    def load_many(
        cls, tenant_id: int, pairs: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], CandidatePool]:
        """One pool per (subject, field), all read with one statement (a revalidation
        chunk asks about many)."""
        wanted = sorted(set(pairs))
        rows = _pool_rows(
            tenant_id,
            '(v."subject_id", v."field") IN (SELECT * FROM unnest(%s::text[], %s::text[]))',
            [[subject_id for subject_id, _ in wanted], [name for _, name in wanted]],
        )
        found: dict[tuple[str, str], list[tuple[Any, frozenset[str]]]] = {
            pair: [] for pair in wanted
        }
        for subject_id, row in rows:
            found[(subject_id, row[0].field)].append(row)
        return {
            (subject_id, field_name): cls(tenant_id, subject_id, (field_name,), tuple(pooled))
            for (subject_id, field_name), pooled in found.items()
        }

    def serves(self, request: CandidateRequest) -> bool:
        return (
            request.tenant_id == self.tenant_id
            and request.subject_id == self.subject_id
            and bool(request.fields)
            and set(request.fields or ()) <= set(self.fields)
            and not request.with_policy
        )

    def candidates(self, request: CandidateRequest) -> list[resolver.Candidate]:
        if not self.serves(request):
            return load_candidates(request)
        return [
            to_candidate(row, request.known_at, request.include)
            for row, cited in self.rows
            if matches(row, cited, request)
        ]


def matches(row: Any, cited: frozenset[str], request: CandidateRequest) -> bool:
    """``candidate_sql``'s WHERE clause for one row of the request's tenant and subject."""
    known_at = request.known_at
    in_use = (
        row.activated_at is not None
        and row.activated_at <= known_at
        and (row.deactivated_at is None or row.deactivated_at > known_at)
        and not (request.exclude_item and row.item_id == request.exclude_item)
        and not (request.exclude_version is not None and row.id == request.exclude_version)
    )
    included = request.include is not None and row.id == request.include
    if not (in_use or included):
        return False
    if request.fields and row.field not in request.fields:
        return False
    if request.prefilter and not _contained(row.scope, request.context):
        return False
    if request.revoked_sources and not cited.isdisjoint(request.revoked_sources):
        spared = request.revocation_spares_item
        if not spared or row.item_id != spared or included:
            return False
    return True


def _contained(scope: Any, context: Mapping[str, str]) -> bool:
    """``scope <@ context OR scope = '{"tenant": "*"}'`` for a scope of strings."""
    if scope == {"tenant": "*"}:
        return True
    return isinstance(scope, dict) and all(
        key in context and context[key] == value for key, value in scope.items()
    )


def load_candidates(request: CandidateRequest) -> list[resolver.Candidate]:
    return [to_candidate(row, request.known_at, request.include) for row in candidate_rows(request)]


# A field's authoritative system as the statement carries it: (name, url, tool).
Authorities = Mapping[str, tuple[str, str, str]]


def load_candidates_policy_and_authorities(
    request: CandidateRequest,
) -> tuple[list[resolver.Candidate], resolver.Policy | None, Authorities]:
    """The candidates, the tenant's current policy and its fields whose committed state
    lives in another system (the field catalog), from one statement. With no candidate
    back, the policy is None (the caller reads it on its own) and the fields are empty
    (nothing to mark)."""
    rows = candidate_rows(request if request.with_policy else replace(request, with_policy=True))
    candidates = [to_candidate(row, request.known_at, request.include) for row in rows]
    if not rows:
        return candidates, None, {}
    first = rows[0]
    policy = _stated_policy(first.policy_version, first.policy_precedence)
    return candidates, policy, _stated_authorities(first.authorities)


@functools.lru_cache(maxsize=256)
def _stated_authorities(text: str | None) -> Authorities:
    if not text:
        return {}
    return {name: tuple(system) for name, system in json.loads(text).items()}


@functools.lru_cache(maxsize=256)
def _stated_policy(version: int, precedence: str) -> resolver.Policy:
    """A policy as its row states it, built and checked once per (version, text) rather
    than on every resolve (a published policy never changes; a new one has a new text)."""
    return resolver.Policy.from_precedence(str(version), json.loads(precedence))
