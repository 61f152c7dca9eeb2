"""What an erasure follows beyond the rows about her (issue 42, point 6): her names where
they were written before anyone linked them to her, the replays that quote her, and her
ids and values copied into the questions of other proposals. ``memory.erasure`` calls
these; those that need her names run in ``erasure_start``, the only moment they are still
known (the start makes them a tombstone), the others in its ``copies`` phase.

A name matches casefolded, with runs of white space as one space, as ``entity_match``
compares names: a held mention is hers when it *is* her name, an alias or her external
ref, or holds her whole name as words ("Ottoline Quillfeather's parcel"); a mention that
is also the exact name or alias of another live entity does not single her out and stays.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Q

from audit.chain import canonical_json
from core.models import IdempotencyRecord
from memory.models import Alias, Entity, MemoryItem, MemoryVersion, Source

# A string value shorter than this ("yes", "mornings") is no evidence of a copy by itself.
DISTINCT_VALUE = 8


def normalized(text: str) -> str:
    return " ".join(text.split()).casefold()


def names_of(entity: Entity) -> list[str]:
    """Her name, aliases and external ref, normalized; the longest first."""
    names = {normalized(entity.name), normalized(entity.external_ref)}
    names.update(normalized(a) for a in entity.aliases.values_list("alias", flat=True))
    names.discard("")
    return sorted(names, key=lambda n: (-len(n), n))


def _as_words(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")


def naming(text: str, names: Iterable[str]) -> bool:
    """Whether ``text`` holds one of the names as whole words (casefolded)."""
    folded = normalized(text)
    return any(_as_words(name).search(folded) for name in names)


def mentions_of(entity: Entity, names: Collection[str]) -> list[str]:
    """The lineages never linked to a subject whose mention names her (she is their
    subject by the only evidence Memgov has), in id order."""
    full = normalized(entity.name)
    shared = _names_of_others(entity, names)
    found = []
    unlinked = MemoryItem.objects.filter(tenant_id=entity.tenant_id, subject__isnull=True).exclude(
        subject_mention=""
    )
    for item_id, mention in unlinked.order_by("pk").values_list("pk", "subject_mention"):
        said = normalized(mention)
        if said in shared:
            continue
        if said in names or (full and _as_words(full).search(said)):
            found.append(item_id)
    return found


def _names_of_others(entity: Entity, names: Collection[str]) -> set[str]:
    """Those of her names that another live entity of the tenant has too."""
    others = Entity.objects.filter(tenant_id=entity.tenant_id, erased_at__isnull=True).exclude(
        pk=entity.pk
    )
    shared = set(others.filter(name_normalized__in=names).values_list("name_normalized", flat=True))
    shared.update(
        Alias.objects.filter(tenant_id=entity.tenant_id, normalized__in=names)
        .exclude(entity=entity)
        .values_list("normalized", flat=True)
    )
    return {normalized(n) for n in shared}


def link_mentions(entity: Entity, item_ids: list[str]) -> list[str]:
    """Make her the subject of those lineages (locked, and still unlinked once locked: a
    reviewer may have linked one meanwhile), so that the erasure retires and purges them
    with hers and counts the sources they cite as hers. Returns the ids linked."""
    linked = list(
        MemoryItem.objects.select_for_update(no_key=True)
        .filter(pk__in=item_ids, subject__isnull=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    MemoryItem.objects.filter(pk__in=linked).update(subject=entity)
    MemoryVersion.objects.filter(item_id__in=linked).update(subject=entity)
    return linked


def alias_sources_to_purge(entity: Entity) -> list[str]:
    """Sources cited as evidence of her aliases and of nothing else: no version cites
    them (a version's citation is weighed in the ``sources`` phase) and no other entity's
    alias. The aliases go at the start, and their evidence with them."""
    cited = set(
        Alias.objects.filter(entity=entity).exclude(source=None).values_list("source_id", flat=True)
    )
    if not cited:
        return []
    elsewhere = set(
        Alias.objects.filter(source_id__in=cited)
        .exclude(entity=entity)
        .values_list("source_id", flat=True)
    )
    elsewhere.update(
        MemoryVersion.sources.through.objects.filter(source_id__in=cited).values_list(
            "source_id", flat=True
        )
    )
    return sorted(cited - elsewhere)


def purge_sources(source_ids: Collection[str]) -> int:
    """What a source said, and by whom, is gone; its digest stays (what was purged can
    still be proven). Counts the sources that still held something."""
    return (
        Source.objects.filter(pk__in=source_ids)
        .filter(
            ~Q(content=None)
            | ~Q(speaker="")
            | ~Q(metadata={})
            | ~Q(external_ref="")
            | ~Q(revoked_reason="")
        )
        .update(content=None, speaker="", metadata={}, external_ref="", revoked_reason="")
    )


def replays_naming(tenant_id: int, needles: Collection[str]) -> list[int]:
    """Stored replays whose answer quotes one of ``needles`` (names, ids) as whole words:
    found by ``LIKE`` on the JSON text, confirmed casefolded in Python."""
    if not needles:
        return []
    forms = set(needles) | {json.dumps(n)[1:-1] for n in needles}  # SQLite keeps \\u escapes
    rows = (
        IdempotencyRecord.objects.filter(tenant_id=tenant_id)
        .filter(reduce(or_, (Q(response_body__icontains=f) for f in sorted(forms))))
        .values_list("pk", "response_body", "response_headers")
    )
    return [
        pk
        for pk, body, headers in rows
        if naming(json.dumps([body, headers], ensure_ascii=False), needles)
    ]


def her_values(versions: Iterable[Any]) -> tuple[set[str], list[str]]:
    """Her values as canonical JSON, and those of her string values distinctive enough
    to recognize inside another text (casefolded)."""
    exact: set[str] = set()
    texts: set[str] = set()
    for value in versions:
        if value is None:
            continue
        exact.add(canonical_json(value))
        if isinstance(value, str) and len(value.strip()) >= DISTINCT_VALUE:
            texts.add(normalized(value))
    return exact, sorted(texts)


def copied(
    option: Mapping[str, Any],
    *,
    entity_id: str,
    items: Collection[str],
    others: Collection[str],
    values: tuple[set[str], list[str]],
) -> bool:
    """Whether a question's option carries her: her entity id anywhere in it, one of her
    memory ids, or one of her values. A value that another subject's own memory holds too
    (its ``memory_id`` is not hers) is that memory's, and stays."""
    text = json.dumps(option, ensure_ascii=False, default=str)
    if entity_id in text or any(item in text for item in items):
        return True
    if option.get("memory_id") in others:
        return False
    exact, texts = values
    if "value" in option and canonical_json(option["value"]) in exact:
        return True
    folded = normalized(text)
    return any(value in folded for value in texts)
