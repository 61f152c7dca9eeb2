"""Entities and their aliases: stable ids, names as evidence, never identifiers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NoReturn

from django.db import connection, transaction

from audit.chain import digest
from audit.services import audit_append
from core.errors import Gone, InvalidContent
from core.principals import Principal
from memory import semantic
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
    errors: dict[str, list[str]] = {}
    for member, texts in (("name", [name]), ("aliases", list(aliases))):
        if any(not fits(text) for text in texts):
            errors[member] = [TOO_LONG]
    if errors:
        raise InvalidContent(errors)
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
    semantic.after_recorded(tenant=principal.tenant, entity_ids=[entity.pk])
    return entity


# A name is kept as given and casefolded for matching, and casefolding may lengthen it
# ("ß" is "ss"): a name of 200 characters could overflow its column, which PostgreSQL
# refuses (a 500 before issue 44) and SQLite stores.
MAX_NAME = Entity._meta.get_field("name").max_length or 200
MAX_NORMALIZED = Entity._meta.get_field("name_normalized").max_length or 200
TOO_LONG = (
    f"must be at most {MAX_NAME} characters, and at most {MAX_NORMALIZED} once case-folded "
    "('ß' counts as 'ss')"
)


def fits(name: str) -> bool:
    """Whether a name and its casefolded form fit their columns."""
    kept = name.strip()
    return len(kept) <= MAX_NAME and len(kept.casefold()) <= MAX_NORMALIZED


def require_live(entity_ids: Iterable[str], *, member: str) -> None:
    """Refuse a write that names an erased entity: a 410 ``erased`` naming ``member``, since
    it would give her new personal data after her erasure (issue 42). Called inside the
    write's transaction, where it locks the rows FOR KEY SHARE on PostgreSQL: an erasure
    starting (``SELECT … FOR UPDATE`` of the entity) waits for the write to commit and then
    retires what it wrote, or the write waits for the erasure and reads ``erased_at``."""
    ids = sorted({i for i in entity_ids if i})
    if not ids:
        return
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, erased_at FROM memory_entity WHERE id = ANY(%s) ORDER BY id "
                "FOR KEY SHARE",
                [ids],
            )
            erased = [entity_id for entity_id, erased_at in cursor.fetchall() if erased_at]
    else:  # SQLite runs one write transaction at a time: there is nothing to cross
        erased = list(
            Entity.objects.filter(pk__in=ids, erased_at__isnull=False).values_list("pk", flat=True)
        )
    if erased:
        raise_erased(erased[0], member=member)


def raise_erased(entity_id: str, *, member: str) -> NoReturn:
    """The one answer to a write naming an erased entity, naming the member that named it."""
    raise Gone(
        f"Entity {entity_id} was erased: nothing more is recorded about it.",
        errors={member: [f"entity {entity_id} was erased"]},
    )


def alias_add(*, principal: Principal, entity: Entity, alias: str, source: Source | None) -> Alias:
    """One more name for a live entity; an erased one takes no new name (410)."""
    if not fits(alias):
        raise InvalidContent({"alias": [TOO_LONG]})
    normalized = alias.strip().casefold()
    with transaction.atomic(durable=True):
        locked = Entity.objects.select_for_update(no_key=True).get(pk=entity.pk)
        if locked.erased_at is not None:
            raise_erased(entity.pk, member="entity_id")
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
        semantic.after_recorded(tenant=principal.tenant, entity_ids=[entity.pk])
    return created
