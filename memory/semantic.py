"""Semantic retrieval's store: which texts get a vector, where vectors live, and the
nearest ones a caller may see (docs/design.md, Semantic retrieval; decision 0022).

A version's text is what a reader would say of it — its subject's name, its field in
words, its value (referenced entities by name) and its statement; an entity's is its name
and aliases. The worker embeds them through the outbox (``after_recorded``) and a beat
sweeper catches up on anything without a vector of the configured model
(``embed_missing``); no request and no activation waits for the model.

PostgreSQL keeps vectors in a pgvector ``vector`` column with an HNSW index (cosine) per
model; SQLite keeps float32 BLOBs and sqlite-vec's ``vec_distance_cosine`` scans them
(``make run``'s scale). Either way the nearest rows are read in one statement that also
applies the tenant, the caller's labels, the statuses and the subject, so a hidden fact is
neither ranked nor counted. Without the extension, the column is never made and search
stays lexical; ``state()`` says which (``/readyz``)."""

from __future__ import annotations

import hashlib
import logging
import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from core.kinds import OutboxKind
from core.outbox import outbox_write
from core.principals import Principal
from memory import embeddings
from memory.models import Alias, Embedding, Entity, MemoryVersion
from memory.search_terms import WORDS, fold, romanized
from memory.vectors import TABLE, model_literal, store_ready
from memory.visibility import visible_sql

logger = logging.getLogger(__name__)
CHUNK = 256  # versions or entities embedded per task run's step
# Cosine similarity (all-MiniLM-L6-v2) below which what is near in meaning alone is not
# an answer: a fact merely similar, an entity merely alike. Calibrated on
# bench/quality_set.py's answerable and no-answer questions (bench/README.md).
MEMORY_FLOOR = 0.45
SCOPED_FLOOR = 0.3  # among the facts of entities the query names (memory.hybrid)
ENTITY_FLOOR = 0.45
NEAR_ENTITIES = 10  # entities read by meaning per query
REFERENCE_KEY = "entity"


@dataclass(frozen=True)
class Near:
    """A version or entity whose text is near the query's, with its cosine similarity."""

    type: str  # "memory" | "entity"
    id: str  # the entity's id, or the version's row id as text
    similarity: float


# --- Whether semantic retrieval runs here -------------------------------------------------

_said_off: set[str] = set()


def _say_off_once(reason: str) -> None:
    if reason not in _said_off:
        _said_off.add(reason)
        logger.warning("semantic retrieval is off: %s; search is lexical", reason)


def _sqlite_vec_loaded() -> bool:
    return bool(getattr(connection, "memgov_sqlite_vec", False))


def model() -> embeddings.Model | None:
    """The configured model when its vectors can be stored and read on this database."""
    configured = embeddings.configured()
    if configured is None:
        return None
    if connection.vendor == "sqlite":
        connection.ensure_connection()  # the extension is loaded as a connection opens
    if connection.vendor == "sqlite" and not _sqlite_vec_loaded():
        _say_off_once("sqlite-vec cannot be loaded by this Python's SQLite (README)")
        return None
    if not store_ready(connection):
        _say_off_once(
            "the database has no vector column (PostgreSQL needs the pgvector extension: "
            "docs/operations.md, then `manage.py migrate`)"
        )
        return None
    return configured


def state() -> str:
    """``on`` or ``off``, for readiness: never loads the model."""
    return "on" if model() is not None else "off"


# --- The store ----------------------------------------------------------------------------


def _as_parameter(vector: Sequence[float]) -> Any:
    if connection.vendor == "postgresql":
        return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
    return struct.pack(f"<{len(vector)}f", *vector)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _store(
    model: embeddings.Model, tenant_id: int, rows: list[tuple[str, Any, str, list[float]]]
) -> None:
    """Rows of (column, id, digest, vector), column "version_id" or "entity_id": each
    replaces that thing's vector of this model."""
    now = timezone.now()
    cast = f"%s::vector({model.dimensions})" if connection.vendor == "postgresql" else "%s"
    try:
        _replace(model, tenant_id, rows, now, cast)
    except IntegrityError:
        # Another worker stored some of these first (the sweeper beside the outbox task):
        # theirs stand, and anything still missing is the next sweep's.
        logger.info("vectors stored concurrently by another worker; kept theirs")


def _replace(
    model: embeddings.Model,
    tenant_id: int,
    rows: list[tuple[str, Any, str, list[float]]],
    now: Any,
    cast: str,
) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        # Locked as an erasure locks them: a vector is never stored for what was erased
        # while its text was being embedded (the erasure deletes vectors after its update).
        live: dict[str, set[Any]] = {
            "version_id": set(
                MemoryVersion.objects.select_for_update(no_key=True)
                .filter(pk__in=[r[1] for r in rows if r[0] == "version_id"], erased_at=None)
                .values_list("pk", flat=True)
            ),
            "entity_id": set(
                Entity.objects.select_for_update(no_key=True)
                .filter(pk__in=[r[1] for r in rows if r[0] == "entity_id"], erased_at=None)
                .values_list("pk", flat=True)
            ),
        }
        kept = [row for row in rows if row[1] in live[row[0]]]
        for column, ids in live.items():
            if ids:
                Embedding.objects.filter(model=model.name, **{f"{column}__in": ids}).delete()
        if not kept:
            return
        cursor.executemany(
            f"INSERT INTO {TABLE} (tenant_id, version_id, entity_id, model, digest, "  # noqa: S608 - constant SQL, bound values
            f"embedded_at, vec) VALUES (%s, %s, %s, %s, %s, %s, {cast})",
            [
                (
                    tenant_id,
                    thing if column == "version_id" else None,
                    thing if column == "entity_id" else None,
                    model.name,
                    digest,
                    now,
                    _as_parameter(vector),
                )
                for column, thing, digest, vector in kept
            ],
        )


# --- Texts --------------------------------------------------------------------------------


def _value_text(value: Any) -> str:
    """A value as words: strings and numbers as they are, member names as words
    ("ships_to 4 Dock Road"); a referenced entity is left out, as the subject is
    (``version_text``)."""
    if isinstance(value, dict):
        if set(value) == {REFERENCE_KEY} and isinstance(value[REFERENCE_KEY], str):
            return ""
        return " ".join(f"{_words(str(k))} {_value_text(v)}".strip() for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_value_text(v) for v in value)
    if value is None or isinstance(value, bool):
        return "" if value is None else str(value).lower()
    return str(value)


def _words(name: str) -> str:
    return re.sub(r"[_\-.]+", " ", name).strip()


def version_text(version: MemoryVersion) -> str:
    """What the fact says: its field in words, its value and its statement. Not the names
    of its subject or of entities it references: a name would make every fact about Dana
    near any question naming Dana, her favourite colour included. Names are matched by
    lexical search, which scopes the facts read by meaning (memory.hybrid)."""
    value = _value_text(version.value)
    return f"{_words(version.field)}: {value}. {version.statement}".strip()


def entity_text(entity: Entity, aliases: Iterable[str]) -> str:
    """Its name, then its aliases and each name's Latin letters (王伟: "Wang Wei")."""
    names = [entity.name, *aliases]
    others = [
        n for n in dict.fromkeys([*names[1:], *map(romanized, names)]) if n and n != entity.name
    ]
    return f"{entity.name} ({', '.join(others)})" if others else entity.name


def entity_words(entity_ids: list[str]) -> dict[str, set[str]]:
    """Each entity's words: of its name, aliases, external ref and their Latin letters."""
    texts: dict[str, list[str]] = {}
    for entity_id, name, ref in Entity.objects.filter(pk__in=entity_ids).values_list(
        "id", "name", "external_ref"
    ):
        texts.setdefault(entity_id, []).extend([name, ref])
    for entity_id, alias in Alias.objects.filter(entity_id__in=entity_ids).values_list(
        "entity_id", "alias"
    ):
        texts.setdefault(entity_id, []).append(alias)
    return {
        entity_id: {
            word
            for text in each
            for spelled in (text, romanized(text))
            for word in WORDS.findall(fold(spelled))
        }
        for entity_id, each in texts.items()
    }


# --- Embedding ----------------------------------------------------------------------------


def after_recorded(
    *, tenant: Any, version_ids: Sequence[int] = (), entity_ids: Sequence[str] = ()
) -> None:
    """In the writer's transaction: embed these after commit (core.outbox)."""
    if not (version_ids or entity_ids) or not embeddings.configured():
        return
    outbox_write(
        kind=OutboxKind.EMBED,
        payload={"version_ids": list(version_ids), "entity_ids": list(entity_ids)},
        tenant=tenant,
    )


def embed_versions(version_ids: Sequence[int]) -> int:
    """Embed these versions' texts with the configured model; unchanged texts are kept.
    Returns how many vectors were written."""
    current = model()
    if current is None or not version_ids:
        return 0
    versions = list(
        MemoryVersion.objects.filter(pk__in=version_ids, erased_at__isnull=True).order_by("pk")
    )
    written = 0
    for tenant_id in sorted({v.tenant_id for v in versions}):
        texts = {v.pk: version_text(v) for v in versions if v.tenant_id == tenant_id}
        written += _embed_changed(current, tenant_id, "version_id", texts)
    return written


def embed_entities(entity_ids: Sequence[str]) -> int:
    current = model()
    if current is None or not entity_ids:
        return 0
    entities = list(Entity.objects.filter(pk__in=entity_ids, erased_at__isnull=True).order_by("pk"))
    aliases: dict[str, list[str]] = {}
    for entity_id, alias in Alias.objects.filter(
        entity_id__in=[e.pk for e in entities]
    ).values_list("entity_id", "alias"):
        aliases.setdefault(entity_id, []).append(alias)
    written = 0
    for tenant_id in sorted({e.tenant_id for e in entities}):
        texts = {
            e.pk: entity_text(e, aliases.get(e.pk, ()))
            for e in entities
            if e.tenant_id == tenant_id
        }
        written += _embed_changed(current, tenant_id, "entity_id", texts)
    return written


def _embed_changed(
    current: embeddings.Model, tenant_id: int, column: str, texts: dict[Any, str]
) -> int:
    stored = dict(
        Embedding.objects.filter(model=current.name, **{f"{column}__in": list(texts)}).values_list(
            column, "digest"
        )
    )
    changed = {k: t for k, t in texts.items() if stored.get(k) != _digest(t)}
    if not changed:
        return 0
    keys = list(changed)
    vectors = embeddings.embed(current, [changed[k] for k in keys])
    _store(
        current,
        tenant_id,
        [(column, k, _digest(changed[k]), v) for k, v in zip(keys, vectors, strict=True)],
    )
    return len(keys)


def embed_missing(limit: int = CHUNK) -> int:
    """Embed up to ``limit`` versions and entities that have no vector of the configured
    model (oldest first); the caller runs it again while it returns ``limit``."""
    current = model()
    if current is None:
        return 0
    has_vector = Embedding.objects.filter(model=current.name)
    versions = list(
        MemoryVersion.objects.filter(erased_at__isnull=True)
        .exclude(Exists(has_vector.filter(version_id=OuterRef("pk"))))
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )
    done = embed_versions(versions)
    room = limit - len(versions)
    if room > 0:
        entities = list(
            Entity.objects.filter(erased_at__isnull=True)
            .exclude(Exists(has_vector.filter(entity_id=OuterRef("pk"))))
            .order_by("pk")
            .values_list("pk", flat=True)[:room]
        )
        done += embed_entities(entities)
    return done


@dataclass(frozen=True)
class Progress:
    model: str | None
    embedded: int
    total: int


def progress() -> Progress:
    """How much of the store has a vector of the configured model (versions and entities
    not erased): what ``manage.py embed --status`` and the metrics report."""
    current = model()
    total = (
        MemoryVersion.objects.filter(erased_at__isnull=True).count()
        + Entity.objects.filter(erased_at__isnull=True).count()
    )
    if current is None:
        return Progress(model=None, embedded=0, total=total)
    embedded = Embedding.objects.filter(model=current.name).count()
    return Progress(model=current.name, embedded=embedded, total=total)


def forget(*, version_ids: Sequence[int] = (), entity_ids: Sequence[str] = ()) -> int:
    """Delete every vector of these, whatever the model (erasure)."""
    deleted = 0
    if version_ids:
        deleted += Embedding.objects.filter(version_id__in=version_ids).delete()[0]
    if entity_ids:
        deleted += Embedding.objects.filter(entity_id__in=entity_ids).delete()[0]
    return deleted


# --- Reading ------------------------------------------------------------------------------


def query_text(q: str) -> str:
    """What a query embeds as: its words, and its Latin letters when it has other scripts."""
    latin = romanized(q)
    return f"{q} ({latin})" if latin else q


def query_vector(current: embeddings.Model, text: str) -> list[float]:
    return embeddings.embed(current, [text])[0]


def query_vectors(current: embeddings.Model, texts: list[str]) -> list[list[float]]:
    return embeddings.embed(current, texts)


def _distance(current: embeddings.Model, *, half: bool = False) -> str:
    """Cosine distance to the query; ``half``: at half precision, the expression of the
    versions' HNSW index (memory.vectors.ensure_index), so that PostgreSQL walks it."""
    if connection.vendor == "postgresql":
        kind = "halfvec" if half else "vector"
        return f"(m.vec::{kind}({current.dimensions})) <=> %s::{kind}({current.dimensions})"
    return "vec_distance_cosine(m.vec, %s)"


def nearest_versions(
    current: embeddings.Model,
    principal: Principal,
    vector: list[float],
    *,
    statuses: Sequence[str],
    narrowing: tuple[str, list[Any]],
    limit: int,
    exact: bool = False,
) -> list[Near]:
    """The versions nearest ``vector`` that the caller may see, in one statement: tenant,
    labels, statuses and the subject/kind narrowing (``v.``) are its WHERE clause.

    ``exact`` when the narrowing leaves few rows (a subject's facts): they are read by
    their own indexes and each compared, instead of walking the HNSW graph until enough
    of them turn up among a million."""
    vendor = connection.vendor
    visible, visible_params = visible_sql("v.required_visibility", principal.labels, vendor)
    narrow, narrow_params = narrowing
    distance = _distance(current, half=not exact)
    statuses_sql = ", ".join(["%s"] * len(statuses))
    parameter = _as_parameter(vector)
    sql = (
        f"SELECT m.version_id, {distance} FROM {TABLE} m "  # noqa: S608 - constant SQL, bound values
        "JOIN memory_memoryversion v ON v.id = m.version_id "
        f"WHERE m.model = {model_literal(current)} AND m.tenant_id = %s AND v.tenant_id = %s "
        f"AND v.status IN ({statuses_sql}) AND v.erased_at IS NULL AND {visible}{narrow} "
        f"AND m.version_id IS NOT NULL ORDER BY {_ordered(distance, exact=exact)} LIMIT %s"
    )
    tenant = principal.tenant.pk
    params = [parameter, tenant, tenant, *statuses, *visible_params]
    params += [*narrow_params, parameter, limit]
    return [
        Near("memory", str(version_id), 1.0 - float(distance))
        for version_id, distance in _read(sql, params)
    ]


def nearest_entities(
    current: embeddings.Model, tenant_id: int, vector: list[float], *, limit: int
) -> list[Near]:
    """A tenant's entities nearest ``vector``, from the entities' own HNSW index."""
    distance = _distance(current)
    parameter = _as_parameter(vector)
    sql = (
        f"SELECT m.entity_id, {distance} FROM {TABLE} m "  # noqa: S608 - constant SQL, bound values
        "JOIN memory_entity e ON e.id = m.entity_id "
        f"WHERE m.model = {model_literal(current)} AND m.tenant_id = %s AND e.tenant_id = %s "
        "AND e.erased_at IS NULL "
        f"AND m.entity_id IS NOT NULL ORDER BY {distance} LIMIT %s"
    )
    params = [parameter, tenant_id, tenant_id, parameter, limit]
    return [Near("entity", entity_id, 1.0 - float(d)) for entity_id, d in _read(sql, params)]


def _ordered(distance: str, *, exact: bool) -> str:
    """The ORDER BY: the HNSW index serves the distance itself; ``+ 0`` is the same
    order in an expression no index has, so PostgreSQL compares every row its other
    conditions leave (a tenant's entities, a subject's facts) — exact, and quick when
    they are few."""
    return f"({distance}) + 0" if exact else distance


def _read(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # pgvector 0.8: keep scanning the HNSW graph until LIMIT rows pass the filters
            # (the tenant, labels and statuses), not only the first ef_search candidates.
            cursor.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        cursor.execute(sql, params)
        return list(cursor.fetchall())
