"""Entities and their aliases: stable ids, names as evidence, never identifiers."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from audit.chain import digest
from audit.services import audit_append
from core.errors import InvalidContent
from core.principals import Principal
from memory.models import (
    Alias,
    Entity,
    Source,
)


def entity_create(
    *,
    principal: Principal,
    kind: str,
    name: str,
    aliases: Sequence[str] = (),
    external_ref: str = "",
) -> Entity:
    with transaction.atomic(durable=True):
        return entity_record(
            principal=principal, kind=kind, name=name, aliases=aliases, external_ref=external_ref
        )


def entity_record(
    *,
    principal: Principal,
    kind: str,
    name: str,
    aliases: Sequence[str] = (),
    external_ref: str = "",
) -> Entity:
    """Create and audit in the caller's transaction: a reviewer creating the subject of a
    held mention links it in the same one (approvals.services.memory_link_new_subject)."""
    entity = Entity.objects.create(
        tenant=principal.tenant,
        kind=kind,
        name=name.strip(),
        name_normalized=name.strip().casefold(),
        external_ref=external_ref,
    )
    # One alias per normalized form (the unique constraint): "Dana" and "dana" are one.
    kept: dict[str, str] = {}
    for alias in (a.strip() for a in aliases if a.strip()):
        kept.setdefault(alias.casefold(), alias)
    for normalized, alias in kept.items():
        Alias.objects.create(
            entity=entity, tenant=principal.tenant, alias=alias, normalized=normalized
        )
    audit_append(
        tenant=principal.tenant,
        actor=principal.name,
        action="entity.created",
        target_type="entity",
        target_id=entity.pk,
        data={"kind": kind, "aliases": len(aliases)},
    )
    return entity


def alias_add(*, principal: Principal, entity: Entity, alias: str, source: Source | None) -> Alias:
    normalized = alias.strip().casefold()
    with transaction.atomic(durable=True):
        Entity.objects.select_for_update(no_key=True).get(pk=entity.pk)
        if Alias.objects.filter(entity=entity, normalized=normalized).exists():
            raise InvalidContent({"alias": ["this entity already has that alias"]})
        created = Alias.objects.create(
            entity=entity,
            tenant=principal.tenant,
            alias=alias.strip(),
            normalized=normalized,
            source=source,
        )
        audit_append(
            tenant=principal.tenant,
            actor=principal.name,
            action="entity.alias_added",
            target_type="entity",
            target_id=entity.pk,
            data={"alias_sha256": digest(normalized), "source": source.pk if source else None},
        )
    return created
