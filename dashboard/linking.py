"""Linking a held mention to an entity: the candidates as cards a reviewer can tell apart
(aliases, external reference, what is held about each now) and, before the click, what
linking truly does — a preference is not reviewed, so linking it can activate it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from core.authority import Authority
from core.kinds import MemoryKind
from core.principals import Principal
from memory.models import Alias, Entity, MemoryVersion, Status
from memory.selectors import entity_match

MATCHED_ON = {
    "name": "its name",
    "alias": "an alias",
    "name_token": "a word of its name",
    "alias_token": "a word of an alias",
    "alias_prefix": "the start of an alias",
    "transliteration": "its name in other letters",
    "semantic": "a name like it",
}
FACTS_SHOWN = 5  # per card: enough to recognise the entity, not a full profile


@dataclass(frozen=True)
class CandidateCard:
    entity: Entity
    matched_on: str
    aliases: tuple[str, ...]
    facts: tuple[MemoryVersion, ...]  # active, and only those the viewer may open
    more_facts: int


def candidate_cards(
    principal: Principal, oversight: Authority, mention: str
) -> list[CandidateCard]:
    """Every entity the mention matches, with its aliases and its current facts; three
    queries for any number of candidates."""
    matches = entity_match(principal=principal, name=mention, kind=None)
    ids = [entity.pk for entity, _ in matches]
    aliases: dict[str, list[str]] = defaultdict(list)
    for entity_id, alias in (
        Alias.objects.filter(tenant=principal.tenant, entity_id__in=ids)
        .order_by("alias")
        .values_list("entity_id", "alias")
    ):
        aliases[entity_id].append(alias)
    facts: dict[str, list[MemoryVersion]] = defaultdict(list)
    active = MemoryVersion.objects.filter(
        tenant=principal.tenant, subject_id__in=ids, status=Status.ACTIVE
    ).order_by("field", "item_id")
    for version in active:
        if oversight.sees(version):
            facts[str(version.subject_id)].append(version)
    return [
        CandidateCard(
            entity=entity,
            matched_on=MATCHED_ON.get(how, how),
            aliases=tuple(aliases[entity.pk]),
            facts=tuple(facts[entity.pk][:FACTS_SHOWN]),
            more_facts=max(0, len(facts[entity.pk]) - FACTS_SHOWN),
        )
        for entity, how in matches
    ]


def link_effect(version: MemoryVersion) -> str:
    """What linking this held version does, said before the reviewer confirms."""
    if version.kind == MemoryKind.PREFERENCE:
        return (
            "A preference is not reviewed: linking starts its scenario checks at once, and "
            "if they pass it becomes active and agents are told it, with no approval."
        )
    count = version.approvals_required
    approvals = "one approval" if count == 1 else f"{count} approvals"
    return (
        f"Linking sends it to review: it needs {approvals}, then its scenario checks, "
        "before agents are told it."
    )


def link_confirmation(version: MemoryVersion) -> str:
    """The label of the box the reviewer ticks to confirm."""
    if version.kind == MemoryKind.PREFERENCE:
        return "I understand: it becomes active without review if its checks pass"
    return "Link it and send it to review"


def linked_message(version: MemoryVersion) -> str:
    """After the link: what happened and what happens next, in the status line."""
    name = version.subject.name if version.subject is not None else str(version.subject_id)
    if version.status == Status.CHECKING:
        return (
            f"Linked to {name}. Its scenario checks are running; if they pass it becomes "
            "active without review."
        )
    return f"Linked to {name}. It now waits for review like any other proposal."
