"""What the scenario checks read of the tenant beyond the version itself (``approvals.checks``
asks the questions): another value of a scope dimension, another subject, the labels a
reader needs now, the candidate pool and the current policy. Within ``tenant_lookups`` a
revalidation chunk reads them once for all its versions."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from django.db import connection
from django.db.models import F

from core.models import ScopeValue, Tenant
from memory import resolver
from memory.candidates import CandidatePool
from memory.models import Entity, MemoryVersion, Scenario, Source, Status
from memory.selectors import current_policy, resolver_policy

T = TypeVar("T")

# What a revalidation chunk reads alike for all its versions, remembered for the chunk only
# (``tenant_lookups``): answers about the tenant (another scope value, another subject,
# the current policy) and, read for the whole chunk at once (``_prefetch``), each
# version's cited sources' labels, custom scenarios, active siblings and candidate pool.
_lookups: ContextVar[dict[tuple[Any, ...], Any] | None] = ContextVar("lookups", default=None)
_PREFETCHED = ("labels", "custom", "regression", "pool")


@contextmanager
def tenant_lookups(versions: Sequence[MemoryVersion] = ()) -> Iterator[None]:
    """Within the block, sibling values and other subjects are read once per (tenant,
    dimension) and (tenant, field), the policy once per tenant, and what each of
    ``versions`` needs in one query per kind for all of them: a
    revalidation chunk checks many versions of the same tenant, against data the chunk
    does not change (``lookups_refresh`` after a change it does make)."""
    token = _lookups.set(_prefetch(versions))
    try:
        yield
    finally:
        _lookups.reset(token)


def lookups_refresh(versions: Sequence[MemoryVersion]) -> None:
    """After the chunk changed the data (a suspension committed), the versions still to
    check read it again: they are checked without the suspended item."""
    memo = _lookups.get()
    if memo is not None:
        for key in [k for k in memo if k[0] in _PREFETCHED]:
            del memo[key]
        memo.update(_prefetch(versions))


def remembered(key: tuple[Any, ...], read: Callable[[], T]) -> T:
    memo = _lookups.get()
    if memo is None:
        return read()
    if key not in memo:
        memo[key] = read()
    found: T = memo[key]
    return found


def prefetched(key: tuple[Any, ...], read: Callable[[], T]) -> T:
    """What the chunk read for this version beforehand, else read it now."""
    memo = _lookups.get()
    if memo is not None and key in memo:
        found: T = memo[key]
        return found
    return read()


def _prefetch(versions: Sequence[MemoryVersion]) -> dict[tuple[Any, ...], Any]:
    """One query per kind for every version of a chunk, filed under each version's id:
    the same rows ``current_label_sets``, ``checks.custom_specs``, the regression specs and
    ``pool_for`` would read one version at a time."""
    memo: dict[tuple[Any, ...], Any] = {}
    if not versions:
        return memo
    cited = {pk for v in versions for pk in v.source_ids}
    visibility = dict(Source.objects.filter(pk__in=cited).values_list("pk", "visibility"))
    custom = list(
        Scenario.objects.filter(
            version__item_id__in={v.item_id for v in versions}, removal__isnull=True
        )
        .annotate(item_id=F("version__item_id"), number=F("version__number"))
        .order_by("pk")
    )
    actives: dict[tuple[int, Any, str], list[MemoryVersion]] = {}
    for active in MemoryVersion.objects.filter(
        tenant_id__in={v.tenant_id for v in versions},
        subject_id__in={v.subject_id for v in versions if v.subject_id is not None},
        field__in={v.field for v in versions},
        status=Status.ACTIVE,
    ).order_by("item_id"):
        actives.setdefault((active.tenant_id, active.subject_id, active.field), []).append(active)
    pools = _pools(versions)
    for v in versions:
        memo[("labels", v.pk)] = _label_sets(v, visibility)
        memo[("custom", v.pk)] = [
            s for s in custom if s.item_id == v.item_id and s.number <= v.number
        ]
        memo[("regression", v.pk)] = [
            o
            for o in actives.get((v.tenant_id, v.subject_id, v.field), ())
            if o.item_id != v.item_id
        ]
        memo[("pool", v.pk)] = pools.get((v.tenant_id, str(v.subject_id), v.field))
    return memo


def _pools(versions: Sequence[MemoryVersion]) -> dict[tuple[int, str, str], CandidatePool]:
    if connection.vendor != "postgresql":
        return {}
    wanted: dict[int, set[tuple[str, str]]] = {}
    for v in versions:
        if v.subject_id is not None:
            wanted.setdefault(v.tenant_id, set()).add((str(v.subject_id), v.field))
    return {
        (tenant_id, subject_id, field_name): pool
        for tenant_id, pairs in wanted.items()
        for (subject_id, field_name), pool in CandidatePool.load_many(tenant_id, pairs).items()
    }


def sibling_value(version: MemoryVersion, dimension: str, value: str) -> str:
    """A real other value seen in the tenant when one exists, else a made-up one: the
    first in order besides ``value``, so the two first of the dimension tell it."""
    first_two = remembered(
        ("first_values", version.tenant_id, dimension),
        lambda: list(
            ScopeValue.objects.filter(tenant_id=version.tenant_id, dimension=dimension)
            .order_by("value")
            .values_list("value", flat=True)[:2]
        ),
    )
    return next((other for other in first_two if other != value), f"{value}~other")


OTHER_SUBJECT = "ent_scenario_other_subject"


def other_subject(version: MemoryVersion) -> str:
    """A real other subject of the tenant, preferring one with memories of the same field
    (so the query has rows to mix the version into); a made-up id when none exists. The
    first in order besides the version's own, so the two first tell it."""
    tenant_id, field_name = version.tenant_id, version.field
    with_field = remembered(
        ("first_subjects", tenant_id, field_name),
        lambda: _first_two(tenant_id, memory_items__field=field_name),
    )
    subject = str(version.subject_id)
    found = next((pk for pk in with_field if pk != subject), None)
    if found is None:
        any_two = remembered(("first_subjects", tenant_id), lambda: _first_two(tenant_id))
        found = next((pk for pk in any_two if pk != subject), None)
    return found or OTHER_SUBJECT


def _first_two(tenant_id: int, **having: str) -> list[str]:
    entities = Entity.objects.filter(tenant_id=tenant_id, **having).distinct().order_by("pk")
    return [str(pk) for pk in entities.values_list("pk", flat=True)[:2]]


def current_label_sets(version: MemoryVersion) -> list[frozenset[str]]:
    """The labels a reader needs now: each cited source's current labels, and the
    item's own visibility (which can only narrow)."""
    return prefetched(
        ("labels", version.pk),
        lambda: _label_sets(
            version,
            dict(Source.objects.filter(pk__in=version.source_ids).values_list("pk", "visibility")),
        ),
    )


def _label_sets(version: MemoryVersion, visibility: dict[str, Any]) -> list[frozenset[str]]:
    sets = [frozenset(visibility.get(pk) or ["*"]) for pk in version.source_ids]
    if list(version.visibility) != ["*"]:
        sets.append(frozenset(version.visibility))
    return sets


def pool_for(version: MemoryVersion) -> CandidatePool | None:
    """The version's subject and field read once for all its scenarios (PostgreSQL; on
    SQLite each scenario runs the ORM's query). The scenarios about another subject or
    another tenant still run the query itself: they test its filters."""
    if connection.vendor != "postgresql" or version.subject_id is None:
        return None
    return prefetched(
        ("pool", version.pk),
        lambda: CandidatePool.load(version.tenant_id, str(version.subject_id), (version.field,)),
    )


def current_resolver_policy(tenant: Tenant) -> resolver.Policy:
    """The tenant's current policy, read once per revalidation chunk."""
    return remembered(("policy", tenant.pk), lambda: resolver_policy(current_policy(tenant)))
