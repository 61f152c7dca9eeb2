"""Facts about several entities (seed 000): a value names another entity as
``{"entity": "ent_…"}``, anywhere in it. The fact stays one record, under its subject;
``EntityReference`` rows let it be listed, searched and erased through each entity it
references too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db import connection
from django.db.models import F, Q, QuerySet

from core.models import Tenant
from core.principals import Principal
from core.sql import fetched
from memory.entities import raise_erased, require_live
from memory.models import Entity, EntityReference, MemoryVersion
from memory.rules import Errors
from memory.visibility import VisibleTo

REFERENCE_KEY = "entity"


def _pointer_part(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def found_in(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(JSON pointer, referenced id) for each ``{"entity": …}`` object in ``value``: an
    object whose only member is ``entity``. Anything else with an ``entity`` member (a
    name, a label) is plain data."""
    if isinstance(value, dict):
        if set(value) == {REFERENCE_KEY}:
            yield path, value[REFERENCE_KEY]
            return
        for key, member in value.items():
            yield from found_in(member, f"{path}/{_pointer_part(str(key))}")
    elif isinstance(value, list):
        for index, member in enumerate(value):
            yield from found_in(member, f"{path}/{index}")


def check_value_references(tenant: Tenant, value: Any, errors: Errors) -> None:
    """Each reference names an entity of this tenant (else 422) that is not erased (else
    410: the write would give an erased person new data)."""
    found = list(found_in(value))
    if not found:
        return
    wanted = {ref for _path, ref in found if isinstance(ref, str)}
    existing = dict(
        Entity.objects.filter(tenant=tenant, pk__in=wanted).values_list("pk", "erased_at")
    )
    for path, ref in found:
        where = f"value{path}" if path else "value"
        if not isinstance(ref, str):
            errors.add("value", f"{where}: 'entity' must be an entity id (ent_…)")
        elif ref not in existing:
            errors.add("value", f"{where}: no entity {ref} in this tenant")
        elif existing[ref] is not None:
            raise_erased(ref, member="value")


def record_value_references(version: MemoryVersion) -> None:
    """Index the references of a new version's value (in the caller's transaction), each
    referenced entity locked against an erasure starting meanwhile (else 410)."""
    rows = {(path, ref) for path, ref in found_in(version.value) if isinstance(ref, str)}
    require_live((ref for _path, ref in rows), member="value")
    EntityReference.objects.bulk_create(
        EntityReference(tenant_id=version.tenant_id, version=version, entity_id=ref, path=path)
        for path, ref in sorted(rows)
    )


def facts_about(principal: Principal, entity: Entity) -> QuerySet[MemoryVersion]:
    """The head version of each lineage whose subject is ``entity`` or whose head's value
    references it: one record per fact, whichever way it concerns the entity; only those
    the principal may see (in SQL, as for the memory list)."""
    referencing = EntityReference.objects.filter(tenant=principal.tenant, entity=entity).values(
        "version_id"
    )
    return MemoryVersion.objects.filter(
        Q(subject=entity) | Q(pk__in=referencing),
        VisibleTo(principal),
        tenant=principal.tenant,
        number=F("item__head_version"),
    )


def references_of(version_ids: list[int]) -> dict[int, list[str]]:
    """The entities each version's value references, in one statement. PostgreSQL: the
    ids as one array (200 placeholders cost more to build and send than the read)."""
    if connection.vendor == "postgresql":
        pairs = fetched(
            "SELECT version_id, entity_id FROM memory_entityreference WHERE version_id = ANY(%s)",
            [version_ids],
        )
    else:
        refs = EntityReference.objects.filter(version_id__in=version_ids)
        pairs = list(refs.values_list("version_id", "entity_id"))
    found: dict[int, list[str]] = {}
    for version_id, entity_id in pairs:
        found.setdefault(version_id, []).append(entity_id)
    return found
