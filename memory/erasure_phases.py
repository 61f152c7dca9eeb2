"""The phases of an erasure (``memory.erasure`` starts it and runs them): each call of a
phase is one batch in the erasure's locked transaction, adds what it changed to the
erasure's counts (``erasure_count``) and answers whether more is left. Here too: the
registry through which the layers above add their own (``erasure_versions_step``,
``erasure_phase``) and the redaction of stored events they share.

Phases:

- ``copies``: the options of other proposals' questions that carry her (her entity as a
  candidate subject, a value from one of her memories, one of her values given again) are
  taken out of their question; it runs first, while her values are still there to match.
- ``versions``: every version's ``value``, ``statement``, ``basis`` and status reason are
  replaced by nothing and ``erased_at`` set (also of versions of other subjects whose value
  references this one: ``memory.references``; their items were retired at the start);
  their custom scenarios lose their context, their held questions (``Clarification``) the
  mention, question and options;
  the layers above clear what they hang on the versions (``erasure_versions_step``: the
  reviewers' comments, the contexts of the stored check results).
- ``sources``: a source cited only by this subject's versions loses ``content``,
  ``speaker``, ``metadata``, ``external_ref`` and its revocation reason (its sha256
  stays); one also cited for another subject (or by a version whose subject is not yet
  known) is kept and listed in ``kept`` with the other subjects' ids.
- ``retrievals``: retrieval records that used the subject's items, with their uses.
- ``task_flags``: the tasks told to re-verify the subject's items keep their flags, but
  each reason (a retirement's, a revocation's: free text) becomes the erasure's own.
- ``idempotency``: stored replays whose response body names the subject, one of its items
  or a purged source (their bodies held values, statements, names or contents).
- ``outbox``: webhook events (``memory.events``) naming the subject, one of its items or
  a source cited for it lose their reason, whether already dispatched (at rest) or still
  waiting (then what is sent is the redacted payload).
- the phases the layers above add (``erasure_phase``), in the order they registered:
  the webhooks app redacts its deliveries the same way, sent or pending, so a retry after
  the erasure sends no reason; it also redacts an event fanned out after the erasure
  (one that sat in the broker meanwhile).
- ``cache``: Redis entries of the subject. Their keys all begin with
  ``mg:res:<tenant>:<subject>:`` (``memory.generations``), so a SCAN on that prefix finds every
  one without a per-subject index; each is deleted, and so is the subject's generation
  counter. (They were already unreadable: the start moved the subject's generation on.)
- ``done``: one audit event ``subject.erased`` with the counts, the erasure id and the
  former name's and the erasure reason's digests (the reason itself is cleared: it may
  name her); the requester is emailed (no personal content).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from core import redis_client
from core.kinds import OutboxKind
from core.models import IdempotencyRecord, Outbox
from memory import erasure_copies, generations, semantic
from memory.models import (
    Clarification,
    Entity,
    EntityReference,
    Erasure,
    MemoryItem,
    MemoryVersion,
    RetrievalRecord,
    RetrievalUse,
    Scenario,
    Source,
    TaskFlag,
)

TOMBSTONE = "[erased]"
MEMORY_PHASES = (
    "copies",
    "versions",
    "sources",
    "retrievals",
    "task_flags",
    "idempotency",
    "outbox",
)
LAST_PHASES = ("cache", "done")
COUNTS = [
    "items_retired",
    "aliases",
    "mentions",
    "versions",
    "scenarios",
    "clarifications",
    "clarification_options",
    "sources_purged",
    "sources_kept",
    "retrieval_records",
    "retrieval_uses",
    "task_flags",
    "idempotency_records",
    "outbox_rows",
    "cache_entries",
]
_IDS = re.compile(r"\b(?:ent|mem|src)_[0-9a-z]{26}\b")
_OWN_REASON = re.compile(r"erased on request \(era_[0-9a-z]{26}\)")

# What the layers above store about a subject, erased by them: memory cannot import them,
# so they register here from their ``AppConfig.ready`` (as they register outbox handlers).
VersionStep = Callable[[list[int]], dict[str, int]]
Step = Callable[[Erasure], bool]
VERSION_STEPS: list[VersionStep] = []
EXTRA_PHASES: dict[str, Step] = {}


def erasure_versions_step(step: VersionStep, *, counts: tuple[str, ...] = ()) -> None:
    """``step(version_ids)`` runs in the transaction of each batch of erased versions and
    returns what it changed, by the names in ``counts``."""
    if step not in VERSION_STEPS:
        VERSION_STEPS.append(step)
    _declare(counts)


def erasure_phase(name: str, step: Step, *, counts: tuple[str, ...] = ()) -> None:
    """A phase of the erasure, after memory's and before the cache and ``done``: each call
    is one batch in the erasure's transaction (``erasure.cursor`` is the phase's own) and
    returns whether more is left; what it changed goes through ``erasure_count``."""
    if EXTRA_PHASES.setdefault(name, step) is not step or name in STEPS:
        raise ValueError(f"erasure phase {name!r} is already registered")
    _declare(counts)


def _declare(counts: tuple[str, ...]) -> None:
    """Every count starts at 0 at the start, so the answer has the same keys throughout."""
    COUNTS.extend(c for c in counts if c not in COUNTS)


def phases() -> tuple[str, ...]:
    return (*MEMORY_PHASES, *EXTRA_PHASES, *LAST_PHASES)


def batch_size() -> int:
    return int(settings.MEMGOV_ERASURE_BATCH)


def own_reason(erasure: Erasure) -> str:
    """The reason the erasure gives for what it ends: names nobody."""
    return f"erased on request ({erasure.pk})"


def erasure_count(erasure: Erasure, **counts: int) -> None:
    """Add what a batch changed to the erasure's counts (saved with the batch)."""
    erasure.counts = {
        **erasure.counts,
        **{k: erasure.counts.get(k, 0) + v for k, v in counts.items()},
    }


def references_to(tenant_id: int, entity: Entity) -> QuerySet[EntityReference]:
    return EntityReference.objects.filter(tenant_id=tenant_id, entity=entity)


def _subject_versions(erasure: Erasure) -> QuerySet[MemoryVersion]:
    """The subject's versions and every version whose value references the subject."""
    referencing = references_to(erasure.tenant_id, erasure.subject).values("version_id")
    return MemoryVersion.objects.filter(
        Q(subject=erasure.subject) | Q(pk__in=referencing), tenant=erasure.tenant
    )


def _strip_copies(erasure: Erasure) -> bool:
    """Options of other proposals' questions that carry her: her entity offered as a
    subject, a value taken from one of her memories (its ``memory_id``), or one of her
    values given again. The option goes; the question stays for the rest. Runs before
    ``versions``, while her values are still there to be recognized."""
    size = batch_size()
    mine = _subject_versions(erasure)
    rows = list(
        Clarification.objects.filter(tenant=erasure.tenant, pk__gt=int(erasure.cursor or 0))
        .exclude(version__in=mine)
        .exclude(options=[])
        .order_by("pk")
        .values_list("pk", "options")[:size]
    )
    if not rows:
        return False
    named = {i for _, options in rows for i in _IDS.findall(_as_text(options))}
    items = {i for i in named if i.startswith("mem_")}
    hers = set(
        MemoryItem.objects.filter(pk__in=items)
        .filter(Q(subject=erasure.subject) | Q(versions__in=mine))
        .values_list("pk", flat=True)
    )
    values = erasure_copies.her_values(
        mine.filter(erased_at__isnull=True).values_list("value", flat=True)
    )
    stripped = 0
    for pk, options in rows:
        kept = [
            o
            for o in options
            if not isinstance(o, dict)
            or not erasure_copies.copied(
                o, entity_id=erasure.subject_id, items=hers, others=items - hers, values=values
            )
        ]
        if len(kept) < len(options):
            Clarification.objects.filter(pk=pk).update(options=kept)
            stripped += len(options) - len(kept)
    erasure.cursor = str(rows[-1][0])
    erasure_count(erasure, clarification_options=stripped)
    return len(rows) == size


def _erase_versions(erasure: Erasure) -> bool:
    size = batch_size()
    ids = list(
        _subject_versions(erasure)
        .filter(erased_at__isnull=True)
        .order_by("pk")
        .values_list("pk", flat=True)[:size]
    )
    if not ids:
        return False
    changed = MemoryVersion.objects.filter(pk__in=ids, erased_at__isnull=True).update(
        value=None, statement="", basis={}, status_reason="", erased_at=timezone.now()
    )
    semantic.forget(version_ids=ids)  # also the versions referencing her
    scenarios = Scenario.objects.filter(version_id__in=ids).exclude(context={}).update(context={})
    # A held proposal's question quotes the mention and offers values (and names).
    asked = Clarification.objects.filter(version_id__in=ids).update(
        mention="", question="", options=[], choice=""
    )
    erasure_count(erasure, versions=changed, scenarios=scenarios, clarifications=asked)
    for step in VERSION_STEPS:
        erasure_count(erasure, **step(ids))
    return len(ids) == size


def _cited_sources(erasure: Erasure) -> QuerySet[Source]:
    return Source.objects.filter(
        tenant=erasure.tenant, memory_versions__subject=erasure.subject
    ).distinct()


def _purge_sources(erasure: Erasure) -> bool:
    size = batch_size()
    ids = list(
        _cited_sources(erasure)
        .filter(pk__gt=erasure.cursor)
        .order_by("pk")
        .values_list("pk", flat=True)[:size]
    )
    if not ids:
        return False
    through = MemoryVersion.sources.through
    others: dict[str, set[str | None]] = {}
    shared = (
        through.objects.filter(source_id__in=ids)
        .exclude(memoryversion__subject=erasure.subject)
        .values_list("source_id", "memoryversion__subject_id")
        .distinct()
    )
    for source_id, subject_id in shared:
        others.setdefault(source_id, set()).add(subject_id)
    kept = [
        {"source": sid, "also_cited_for": sorted(s for s in others[sid] if s is not None)}
        for sid in ids
        if sid in others
    ]
    purge = [sid for sid in ids if sid not in others]
    purged = erasure_copies.purge_sources(purge)
    erasure.kept = [*erasure.kept, *kept]
    erasure.cursor = ids[-1]
    erasure_count(erasure, sources_purged=purged, sources_kept=len(kept))
    return len(ids) == size


def _delete_retrievals(erasure: Erasure) -> bool:
    size = batch_size()
    items = MemoryItem.objects.filter(tenant=erasure.tenant, subject=erasure.subject)
    ids = list(
        RetrievalUse.objects.filter(tenant=erasure.tenant, item__in=items)
        .order_by("retrieval_id")
        .values_list("retrieval_id", flat=True)
        .distinct()[:size]
    )
    if not ids:
        return False
    uses, _ = RetrievalUse.objects.filter(retrieval_id__in=ids).delete()
    records, _ = RetrievalRecord.objects.filter(pk__in=ids).delete()
    erasure_count(erasure, retrieval_records=records, retrieval_uses=uses)
    return len(ids) == size


def _reword_task_flags(erasure: Erasure) -> bool:
    """The flags stay (the tasks must still re-verify); their free-text reasons go."""
    size = batch_size()
    reason = own_reason(erasure)
    ids = list(
        TaskFlag.objects.filter(tenant=erasure.tenant, item__subject=erasure.subject)
        .exclude(reason=reason)
        .order_by("pk")
        .values_list("pk", flat=True)[:size]
    )
    if not ids:
        return False
    changed = TaskFlag.objects.filter(pk__in=ids).exclude(reason=reason).update(reason=reason)
    erasure_count(erasure, task_flags=changed)
    return len(ids) == size


def erased_names(tenant_id: int, texts: Iterable[str]) -> set[str]:
    """Of the ids found in ``texts``, those of an erased subject, of one of its items or of
    a source cited for it (one query per kind for a whole batch of texts)."""
    found: set[str] = set()
    for text in texts:
        found.update(_IDS.findall(text))
    by_kind = {kind: {i for i in found if i.startswith(kind)} for kind in ("ent_", "mem_", "src_")}
    named: set[str] = set()
    if by_kind["ent_"]:
        named.update(
            Entity.objects.filter(
                tenant_id=tenant_id, pk__in=by_kind["ent_"], erased_at__isnull=False
            ).values_list("pk", flat=True)
        )
    if by_kind["mem_"]:
        named.update(
            MemoryItem.objects.filter(
                tenant_id=tenant_id, pk__in=by_kind["mem_"], subject__erased_at__isnull=False
            ).values_list("pk", flat=True)
        )
    if by_kind["src_"]:
        named.update(
            Source.objects.filter(
                tenant_id=tenant_id,
                pk__in=by_kind["src_"],
                memory_versions__subject__erased_at__isnull=False,
            )
            .values_list("pk", flat=True)
            .distinct()
        )
    return named


def event_data_redacted(data: dict[str, Any], erased: set[str]) -> dict[str, Any] | None:
    """An event's data (``memory.events``) with its reason withheld when the event names
    something in ``erased`` (``erased_names``); None when there is nothing to withhold.
    Ids, statuses and counts stay; the erasure's own reasons name nobody and stay too."""
    reason = data.get("reason")
    if not isinstance(reason, str) or reason in ("", TOMBSTONE) or _OWN_REASON.fullmatch(reason):
        return None
    if not set(_IDS.findall(_as_text(data))) & erased:
        return None
    return {**data, "reason": TOMBSTONE}


def events_redacted(tenant_id: int, datas: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """``event_data_redacted`` for a batch of events of one tenant."""
    erased = erased_names(tenant_id, (_as_text(d) for d in datas if d.get("reason")))
    return [event_data_redacted(d, erased) if erased else None for d in datas]


def _redact_outbox(erasure: Erasure) -> bool:
    """Webhook events written before the erasure, dispatched or waiting: the payload is
    what the fan-out sends, so a waiting one is sent redacted."""
    after = int(erasure.cursor or 0)
    rows = list(
        Outbox.objects.filter(tenant=erasure.tenant, kind=OutboxKind.WEBHOOK_EVENT, pk__gt=after)
        .filter(payload__data__has_key="reason")  # the only free text an event carries
        .exclude(payload__data__reason="")
        .order_by("pk")
        .values_list("pk", "payload")[: batch_size()]
    )
    return events_batch_redact(
        erasure,
        rows,
        lambda pk, payload: Outbox.objects.filter(pk=pk).update(payload=payload),
        "outbox_rows",
    )


def events_batch_redact(
    erasure: Erasure,
    rows: list[tuple[Any, dict[str, Any]]],
    save: Callable[[Any, dict[str, Any]], int],
    count: str,
) -> bool:
    """One batch of a phase over stored events, ``(pk, event)`` in pk order, each event
    with its ``data``: ``save(pk, event)`` stores one whose reason is withheld and answers
    how many rows changed; the cursor moves past the batch. Whether more is left."""
    if not rows:
        return False
    redacted = events_redacted(erasure.tenant_id, [dict(e.get("data") or {}) for _, e in rows])
    changed = sum(
        save(pk, {**event, "data": data})
        for (pk, event), data in zip(rows, redacted, strict=True)
        if data is not None
    )
    erasure.cursor = str(rows[-1][0])
    erasure_count(erasure, **{count: changed})
    return len(rows) == batch_size()


def _mentions_subject(erasure: Erasure, text: str) -> bool:
    """Whether a stored body names the subject, one of its items or a source purged for
    it: ids found in the text are checked against the database (memory stays flat)."""
    found = set(_IDS.findall(text))
    if not found:
        return False
    if erasure.subject_id in found:
        return True
    items = {i for i in found if i.startswith("mem_")}
    if items and MemoryItem.objects.filter(pk__in=items, subject=erasure.subject).exists():
        return True
    kept = {k["source"] for k in erasure.kept}
    sources = {s for s in found if s.startswith("src_")} - kept
    return bool(sources) and _cited_sources(erasure).filter(pk__in=sources).exists()


def _delete_replays(erasure: Erasure) -> bool:
    size = batch_size()
    after = int(erasure.cursor or 0)
    rows = list(
        IdempotencyRecord.objects.filter(tenant=erasure.tenant, pk__gt=after)
        .order_by("pk")
        .values_list("pk", "response_body")[:size]
    )
    if not rows:
        return False
    doomed = [pk for pk, body in rows if _mentions_subject(erasure, _as_text(body))]
    deleted, _ = IdempotencyRecord.objects.filter(pk__in=doomed).delete()
    erasure.cursor = str(rows[-1][0])
    erasure_count(erasure, idempotency_records=deleted)
    return len(rows) == size


def _as_text(body: Any) -> str:
    return body if isinstance(body, str) else json.dumps(body, default=str)


def _delete_cache_entries(erasure: Erasure) -> bool:
    """Delete up to a batch of the Redis entries that may quote her: the subject's own
    answers and those of every subject whose facts referenced her (their answers were
    cached before the erasure retired those facts, and would keep her values until they
    expired). Redis is outside the transaction, so an entry deleted by a run killed
    before commit is not counted (it is gone either way)."""
    if not settings.CACHE_URL:
        return False
    client = redis_client.redis_client()
    referencing = MemoryVersion.objects.filter(
        pk__in=references_to(erasure.tenant_id, erasure.subject).values("version_id")
    ).values_list("subject_id", flat=True)
    subjects = [erasure.subject_id, *sorted({str(s) for s in referencing if s})]
    keys: list[Any] = []
    for subject_id in subjects:
        prefix = generations.entry_prefix(erasure.tenant_id, subject_id)
        keys += list(client.scan_iter(match=f"{prefix}*", count=1000))[: batch_size() - len(keys)]
        if len(keys) >= batch_size():
            break
    if not keys:
        client.delete(generations.subject_generation_key(erasure.tenant_id, erasure.subject_id))
        return False
    erasure_count(erasure, cache_entries=int(client.delete(*keys)))
    return True


STEPS: dict[str, Step] = {
    "copies": _strip_copies,
    "versions": _erase_versions,
    "sources": _purge_sources,
    "retrievals": _delete_retrievals,
    "task_flags": _reword_task_flags,
    "idempotency": _delete_replays,
    "outbox": _redact_outbox,
    "cache": _delete_cache_entries,
    "done": lambda erasure: False,
}
