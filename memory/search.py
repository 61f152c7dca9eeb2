"""Discovery: which entities, facts and sources a text is about (docs/api.md, Search).

Scoped in this order, all in SQL: the caller's tenant, its visibility labels, then the
subject and filters, then ranking. Answers are candidates (ids, one line, status, why
matched), never facts to act on: to use a fact the agent resolves its subject.

The query is parsed once, in Python (memory.search_terms: words, "phrases", ``or``,
``-word``, stop words dropped, accents folded); PostgreSQL reads the GIN indexes of
memory.fulltext with a ``to_tsquery`` of those terms (names also by ``pg_trgm`` word
similarity), SQLite its FTS5 tables with a MATCH of the same terms.

A version is found by its own text (field, statement, value), or through an entity the
text names: its subject's or a referenced entity's name, alias or external ref.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction

from core.principals import Principal
from core.sql import bound_on_server
from memory import fulltext, search_terms
from memory.models import OPEN_STATUSES, EntityReference, Status
from memory.visibility import allowed_labels, visible_sql

# Statuses searched unless ``status`` is given: what is in use or may become so.
DEFAULT_STATUSES: tuple[str, ...] = (Status.ACTIVE, *OPEN_STATUSES)
QUERY_MAX = 200  # characters of a query
SCAN = 200  # rows read per way of matching, before ranking: a common word stays cheap
ENTITY_SCAN = 50  # entities listed as candidates
FOLLOW = 10  # entities the query names strongly enough to find their facts through them
FOLLOW_SCORE = 0.75  # every word of the name, an exact alias or external ref
TEXT = "text"  # matched: the version's text as a whole (members named by ``explain``)
NEAR = 0.7  # a near spelling (pg_trgm) scores at most this: listed, not followed
RANKED = 200  # candidates ranked per answer; narrow by subject for more
LINE = 160  # characters of a candidate's one line
SIMILARITY = 0.5  # pg_trgm word similarity that counts a name as matched
# When nothing matched by text or at SIMILARITY, names are read again down to this: a
# transposition ("norhtwind", 0.43) is kept by its edit distance (``_one_edit``).
NEAR_SCAN = 0.4
ENTITY_BONUS = 0.5  # a fact about an entity the query names ranks above mere word hits


@dataclass(frozen=True)
class SearchQuery:
    q: str
    subject: str | None = None
    kind: str | None = None
    statuses: tuple[str, ...] = DEFAULT_STATUSES

    @property
    def facts_only(self) -> bool:
        """A filter on facts (subject, kind, status) asks for facts only."""
        return bool(self.subject or self.kind or self.statuses != DEFAULT_STATUSES)


@dataclass
class Candidate:
    type: str  # "entity" | "memory" | "source"
    id: str
    score: float
    matched: set[str] = field(default_factory=set)
    body: dict[str, Any] = field(default_factory=dict)
    row: int | None = None  # a memory candidate's version row, to explain a text match

    @property
    def key(self) -> tuple[int, str, str, int]:
        """Descending score, then type, id and version (an item's active version and its
        pending correction are two candidates): a total order for cursor pages."""
        return (
            -round(self.score * 1_000_000),
            self.type,
            self.id,
            int(self.body.get("version") or 0),
        )


def search(principal: Principal, query: SearchQuery) -> list[Candidate]:
    """Every candidate, best first (at most ``RANKED`` of each type). Bound on the server,
    so psycopg prepares the statements (planning them is a third of a search's time)."""
    with bound_on_server(), transaction.atomic(savepoint=False):
        return _search(principal, query)


def _search(principal: Principal, query: SearchQuery) -> list[Candidate]:
    backend = _backend()
    tenant = principal.tenant.pk
    entities = backend.entities(tenant, query.q)
    named = {c.id: c for c in entities if c.score >= FOLLOW_SCORE}
    named = dict(list(named.items())[:FOLLOW])
    found = backend.versions(tenant, principal.labels, query, named)
    candidates = list(found)
    if not query.facts_only:
        candidates += entities
        candidates += backend.sources(tenant, principal.labels, query.q)
    candidates.sort(key=lambda c: c.key)
    return candidates


def explain(candidates: list[Candidate], q: str) -> None:
    """Say which members (field, statement, value) matched, for the candidates shown."""
    _backend().explain(candidates, q)


def _backend() -> _Backend:
    return _Postgres() if connection.vendor == "postgresql" else _Sqlite()


def one_line(text: str | None) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= LINE else line[: LINE - 1].rstrip() + "…"


def _fraction(rank: float) -> float:
    """A rank (ts_rank, -bm25) mapped into 0..1, order kept."""
    rank = max(float(rank), 0.0)
    return rank / (rank + 1.0)


class _Backend:
    def entities(self, tenant: int, q: str) -> list[Candidate]:
        raise NotImplementedError

    def versions(
        self,
        tenant: int,
        labels: frozenset[str],
        query: SearchQuery,
        named: dict[str, Candidate],
    ) -> list[Candidate]:
        raise NotImplementedError

    def sources(self, tenant: int, labels: frozenset[str], q: str) -> list[Candidate]:
        raise NotImplementedError

    def explain(self, candidates: list[Candidate], q: str) -> None:
        """Name the members a text match was found in (SQLite knows them already)."""


def _rows(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def _entity_candidate(row: tuple[Any, ...], score: float, matched: set[str]) -> Candidate:
    entity_id, kind, name, external_ref, erased_at = row
    return Candidate(
        type="entity",
        id=entity_id,
        score=score,
        matched=matched,
        body={
            "kind": kind,
            "name": name,
            "external_ref": external_ref or None,
            "statement": one_line(f"{name} ({kind})"),
            "status": "erased" if erased_at else "active",
        },
    )


def _merge_entities(found: Iterable[tuple[tuple[Any, ...], float, str]]) -> list[Candidate]:
    by_id: dict[str, Candidate] = {}
    for row, score, how in found:
        held = by_id.get(row[0])
        if held is None:
            by_id[row[0]] = _entity_candidate(row, score, {how})
        else:
            held.score = max(held.score, score)
            held.matched.add(how)
    ranked = sorted(by_id.values(), key=lambda c: c.key)
    return ranked[:ENTITY_SCAN]


def _version_candidates(
    rows: list[tuple[Any, ...]], query: SearchQuery, named: dict[str, Candidate]
) -> list[Candidate]:
    """Rows (id, item_id, number, kind, subject_id, field, statement, status, rank, hits),
    ``hits`` naming the members the text matched; references looked up in one query."""
    references: dict[int, list[str]] = {}
    for version_id, entity_id in EntityReference.objects.filter(
        version_id__in=[row[0] for row in rows]
    ).values_list("version_id", "entity_id"):
        references.setdefault(version_id, []).append(entity_id)
    found: dict[int, Candidate] = {}
    for (
        version_id,
        item_id,
        number,
        kind,
        subject,
        field_name,
        statement,
        status,
        rank,
        hits,
    ) in rows:
        if version_id in found:
            continue
        referenced = sorted(set(references.get(version_id, ())))
        matched = set(hits)
        score = _fraction(rank)
        if subject in named:
            matched.add("subject")
            score = max(score, ENTITY_BONUS + named[subject].score * ENTITY_BONUS)
        if named.keys() & set(referenced):
            matched.add("referenced_entity")
            best = max(named[e].score for e in referenced if e in named)
            score = max(score, ENTITY_BONUS + best * ENTITY_BONUS * 0.9)
        if not matched and rank > 0:
            matched.add(TEXT)  # a phrase across members: the document matched as a whole
        if not matched:
            continue
        found[version_id] = Candidate(
            type="memory",
            id=item_id,
            row=version_id,
            score=score,
            matched=matched,
            body={
                "version": number,
                "kind": kind,
                "subject": subject,
                "field": field_name,
                "references": referenced,
                "statement": one_line(statement),
                "status": status,
            },
        )
    ranked = sorted(found.values(), key=lambda c: c.key)
    return ranked[:RANKED]


def _source_candidates(rows: list[tuple[Any, ...]]) -> list[Candidate]:
    return [
        Candidate(
            type="source",
            id=source_id,
            score=_fraction(rank) * ENTITY_BONUS,  # evidence ranks below what it supports
            matched={"content"},
            body={
                "kind": kind,
                "external_ref": external_ref or None,
                "statement": one_line(content),
                "status": "revoked" if revoked_at else "recorded",
            },
        )
        for source_id, kind, external_ref, content, revoked_at, rank in rows
    ]


def _narrowing(tenant: int, query: SearchQuery) -> tuple[str, list[Any]]:
    """The kind and subject filters (as subject, or referenced in the value), both backends."""
    sql, params = "", list[Any]()
    if query.kind:
        sql += " AND v.kind = %s"
        params.append(query.kind)
    if query.subject:
        sql += (
            " AND (v.subject_id = %s OR v.id IN (SELECT r.version_id FROM "
            "memory_entityreference r WHERE r.tenant_id = %s AND r.entity_id = %s))"
        )
        params += [query.subject, tenant, query.subject]
    return sql, params


# An erased entity is never a candidate, nor followed to facts (issue 42).
_LIVE = "e.erased_at IS NULL"
_VERSION_COLUMNS = "v.id, v.item_id, v.number, v.kind, v.subject_id, v.field, v.statement, v.status"


class _Postgres(_Backend):
    """Each way of matching is its own LIMITed branch, so each reads its own index."""

    def entities(self, tenant: int, q: str) -> list[Candidate]:
        norm = " ".join(search_terms.fold(q).split())
        cols = "e.id, e.kind, e.name, e.external_ref, e.erased_at"
        text = _rows(
            f"SELECT {cols}, ts_rank({fulltext.ENTITY_DOCUMENT}, query), "  # noqa: S608 - constant SQL, bound values
            "e.external_ref = %s "
            f"FROM memory_entity e, to_tsquery('{fulltext.NAME_CONFIG}', %s) query "
            f"WHERE e.tenant_id = %s AND {fulltext.ENTITY_DOCUMENT} @@ query "
            f"AND {_LIVE} LIMIT %s",
            [q.strip(), _tsquery(q), tenant, SCAN],
        )
        found: list[tuple[tuple[Any, ...], float, str]] = []
        for *row, rank, is_ref in text:
            if is_ref:
                found.append((tuple(row), 1.0, "external_ref"))
            else:
                named = " ".join(search_terms.fold(row[2]).split())
                how = "name" if norm in named else "external_ref"
                exact = norm == named
                found.append(
                    (tuple(row), 1.0 if exact else FOLLOW_SCORE + _fraction(rank) / 4, how)
                )
        near = self._near(tenant, norm, SIMILARITY)
        if not found and not near:
            # A typo below the threshold: read once more, lower, keep what is one edit away.
            near = self._near(tenant, norm, NEAR_SCAN)
        for entity, normalized, sim, way in near:
            folded = " ".join(search_terms.fold(normalized).split())
            score = 1.0 if way == "alias" and folded == norm else _near(norm, folded, sim)
            if score:
                found.append((entity, score, way))
        return _merge_entities(found)

    def _near(
        self, tenant: int, norm: str, threshold: float
    ) -> list[tuple[tuple[Any, ...], str, float, str]]:
        """Names and aliases at ``threshold`` word similarity or above, SCAN of each: the
        threshold set for this transaction (``<%`` reads it; pg_trgm's default is 0.6)."""
        _rows("SELECT set_config('pg_trgm.word_similarity_threshold', %s, true)", [str(threshold)])
        cols = "e.id, e.kind, e.name, e.external_ref, e.erased_at"
        name = fulltext.ENTITY_NAME.replace("name_normalized", "e.name_normalized")
        names = _rows(
            f"SELECT {cols}, e.name_normalized, word_similarity(%s, {name}) "  # noqa: S608 - constant SQL, bound values
            f"FROM memory_entity e WHERE e.tenant_id = %s AND {_LIVE} AND %s <%% {name} "
            "LIMIT %s",
            [norm, tenant, norm, SCAN],
        )
        alias = fulltext.ALIAS_NAME.replace("normalized", "a.normalized")
        aliases = _rows(
            f"SELECT {cols}, a.normalized, word_similarity(%s, {alias}) "  # noqa: S608 - constant SQL, bound values
            "FROM memory_alias a JOIN memory_entity e ON e.id = a.entity_id "
            f"WHERE a.tenant_id = %s AND {_LIVE} AND %s <%% {alias} LIMIT %s",
            [norm, tenant, norm, SCAN],
        )
        return [(tuple(row), n, float(sim), "name") for *row, n, sim in names] + [
            (tuple(row), n, float(sim), "alias") for *row, n, sim in aliases
        ]

    def versions(
        self,
        tenant: int,
        labels: frozenset[str],
        query: SearchQuery,
        named: dict[str, Candidate],
    ) -> list[Candidate]:
        doc = fulltext.VERSION_DOCUMENT
        visible, visible_params = visible_sql("v.required_visibility", labels, "postgresql")
        where = f"v.tenant_id = %s AND v.status = ANY(%s) AND v.erased_at IS NULL AND {visible}"
        params: list[Any] = [tenant, list(query.statuses), *visible_params]
        kind, kind_params = _narrowing(tenant, dataclasses.replace(query, subject=None))
        text = f"{where}{kind} AND {doc} @@ to_tsquery('{fulltext.TEXT_CONFIG}', %s)"
        text_params = [*params, *kind_params, _tsquery(query.q)]
        if query.subject:
            # The subject's own few versions and those referencing it, each branch on its
            # own index, then the words: with an OR of the two, PostgreSQL reads every
            # version the words match in the tenant and filters them by subject.
            matching = (
                f"(SELECT v.id FROM memory_memoryversion v WHERE {text} AND v.subject_id = %s) "  # noqa: S608 - constant SQL, bound values
                f"UNION (SELECT v.id FROM memory_memoryversion v WHERE {text} AND v.id IN "
                "(SELECT r.version_id FROM memory_entityreference r "
                "WHERE r.tenant_id = %s AND r.entity_id = %s)) LIMIT %s"
            )
            matching_params = [*text_params, query.subject]
            matching_params += [*text_params, tenant, query.subject, SCAN]
        else:
            matching = f"SELECT v.id FROM memory_memoryversion v WHERE {text} LIMIT %s"  # noqa: S608 - constant SQL, bound values
            matching_params = [*text_params, SCAN]
        # By text, ranked; which members matched is worked out for the page only
        # (``explain``): three more vectors a row would triple the cost of a common word.
        rows = _rows(
            f"SELECT {_VERSION_COLUMNS}, ts_rank_cd({doc}, query), ARRAY['{TEXT}'] "  # noqa: S608 - constant SQL, bound values
            f"FROM memory_memoryversion v, to_tsquery('{fulltext.TEXT_CONFIG}', %s) query "
            f"WHERE v.id IN ({matching})",
            [_tsquery(query.q), *matching_params],
        )
        narrow, narrow_params = _narrowing(tenant, query)
        where += narrow
        params += narrow_params
        ids = list(named)
        if ids:
            # Through the entities the text names: their own facts and those referencing
            # them, each branch on its own index; ranked by the entity, no text work.
            rows += _rows(
                f"SELECT {_VERSION_COLUMNS}, 0.0, ARRAY[]::text[] FROM memory_memoryversion v "  # noqa: S608 - constant SQL, bound values
                f"WHERE v.id IN ((SELECT v.id FROM memory_memoryversion v WHERE {where} "
                "AND v.subject_id = ANY(%s) LIMIT %s) UNION (SELECT v.id FROM "
                f"memory_memoryversion v WHERE {where} AND v.id IN (SELECT r.version_id FROM "
                "memory_entityreference r WHERE r.tenant_id = %s AND r.entity_id = ANY(%s)) "
                "LIMIT %s))",
                [*params, ids, SCAN, *params, tenant, ids, SCAN],
            )
        return _version_candidates(rows, query, named)

    def explain(self, candidates: list[Candidate], q: str) -> None:
        rows = [c.row for c in candidates if c.row is not None and TEXT in c.matched]
        if not rows:
            return
        config = fulltext.TEXT_CONFIG
        members = dict(
            _rows(
                "SELECT v.id, array_remove(ARRAY["  # noqa: S608 - constant SQL, bound values
                f"CASE WHEN to_tsvector('{config}', v.field) @@ query THEN 'field' END, "
                f"CASE WHEN to_tsvector('{config}', v.statement) @@ query "
                "THEN 'statement' END, "
                f"CASE WHEN to_tsvector('{config}', coalesce(v.value::text, '')) @@ query "
                "THEN 'value' END], NULL) "
                f"FROM memory_memoryversion v, to_tsquery('{config}', %s) query "
                "WHERE v.id = ANY(%s)",
                [_tsquery(q), rows],
            )
        )
        for candidate in candidates:
            found = set(members.get(candidate.row) or ())
            if found and TEXT in candidate.matched:
                candidate.matched = (candidate.matched - {TEXT}) | found

    def sources(self, tenant: int, labels: frozenset[str], q: str) -> list[Candidate]:
        doc = fulltext.SOURCE_DOCUMENT.replace("content", "s.content")
        rows = _rows(
            "SELECT s.id, s.kind, s.external_ref, s.content, s.revoked_at, ts_rank(hit.doc, query) "  # noqa: S608 - constant SQL, bound values
            "FROM (SELECT s.id, "
            f"{doc} AS doc FROM memory_source s, to_tsquery('{fulltext.TEXT_CONFIG}', %s) query "
            "WHERE s.tenant_id = %s AND s.content IS NOT NULL AND s.visibility ?| %s::text[] "
            f"AND {doc} @@ query LIMIT %s) hit "
            "JOIN memory_source s ON s.id = hit.id, "
            f"to_tsquery('{fulltext.TEXT_CONFIG}', %s) query "
            "ORDER BY 6 DESC, s.id LIMIT %s",
            [_tsquery(q), tenant, allowed_labels(labels), SCAN, _tsquery(q), RANKED],
        )
        return _source_candidates(rows)


def fts5_query(q: str) -> str:
    """The query's terms as an FTS5 MATCH (memory.search_terms); empty when it has no
    positive term, which the answer refuses (a 422 naming ``q``)."""
    return search_terms.fts5(search_terms.parse(q))


def _tsquery(q: str) -> str:
    """The same terms as ``to_tsquery`` text."""
    return search_terms.tsquery(search_terms.parse(q))


def _near(query: str, name: str, similarity: float) -> float:
    """A near spelling's score: by trigram similarity at the documented threshold, or a
    name word one edit (a transposition too) from a query word; 0 when neither."""
    if similarity >= SIMILARITY:
        return similarity * NEAR
    words = [w for w in query.split() if len(w) >= TYPO_MIN]
    if any(_one_edit(w, n) for w in words for n in name.split()):
        return SIMILARITY * NEAR
    return 0.0


TYPO_MIN = 4  # a word shorter than this is one edit from too many others


def _one_edit(a: str, b: str) -> bool:
    """At most one substitution, insertion, deletion or swap of neighbours apart."""
    if a == b:
        return True
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and (a[diff[0]], a[diff[1]]) == (b[diff[1]], b[diff[0]])
        )
    if abs(len(a) - len(b)) != 1:
        return False
    short, long = sorted((a, b), key=len)
    i = next((i for i in range(len(short)) if short[i] != long[i]), len(short))
    return short[i:] == long[i + 1 :]


def _in(values: Sequence[Any]) -> str:
    return ", ".join(["%s"] * len(values))


class _Sqlite(_Backend):
    """``make run``: FTS5 tables (external content, kept by triggers) joined by rowid."""

    def entities(self, tenant: int, q: str) -> list[Candidate]:
        match = fts5_query(q)
        norm = " ".join(search_terms.fold(q).split())
        cols = "e.id, e.kind, e.name, e.external_ref, e.erased_at"
        found: list[tuple[tuple[Any, ...], float, str]] = []
        if match:
            rows = _rows(
                f"SELECT {cols}, -bm25(memory_entity_fts), "  # noqa: S608 - constant SQL, bound values
                "highlight(memory_entity_fts, 0, '[', ']') LIKE '%%[%%' "
                "FROM memory_entity_fts JOIN memory_entity e ON e.rowid = memory_entity_fts.rowid "
                f"WHERE memory_entity_fts MATCH %s AND e.tenant_id = %s AND {_LIVE} LIMIT %s",
                [match, tenant, SCAN],
            )
            for *row, rank, on_name in rows:
                exact = norm in (search_terms.fold(row[2]), search_terms.fold(row[3] or ""))
                how = "name" if on_name else "external_ref"
                score = 1.0 if exact else FOLLOW_SCORE + _fraction(rank) / 4
                found.append((tuple(row), score, how))
            aliases = _rows(
                f"SELECT {cols}, -bm25(memory_alias_fts), a.normalized FROM memory_alias_fts "  # noqa: S608 - constant SQL, bound values
                "JOIN memory_alias a ON a.id = memory_alias_fts.rowid "
                "JOIN memory_entity e ON e.id = a.entity_id "
                f"WHERE memory_alias_fts MATCH %s AND a.tenant_id = %s AND {_LIVE} LIMIT %s",
                [match, tenant, SCAN],
            )
            for *row, rank, alias in aliases:
                exact = " ".join(search_terms.fold(alias).split()) == norm
                score = 1.0 if exact else FOLLOW_SCORE + _fraction(rank) / 4
                found.append((tuple(row), score, "alias"))
        return _merge_entities(found)

    def versions(
        self,
        tenant: int,
        labels: frozenset[str],
        query: SearchQuery,
        named: dict[str, Candidate],
    ) -> list[Candidate]:
        visible, visible_params = visible_sql("v.required_visibility", labels, "sqlite")
        where = (
            f"v.tenant_id = %s AND v.status IN ({_in(query.statuses)}) AND v.erased_at IS NULL "
            f"AND {visible}"
        )
        params: list[Any] = [tenant, *query.statuses, *visible_params]
        narrow, narrow_params = _narrowing(tenant, query)
        where += narrow
        params += narrow_params
        rows: list[tuple[Any, ...]] = []
        match = fts5_query(query.q)
        if match:
            hits = _rows(
                f"SELECT {_VERSION_COLUMNS}, -bm25(memory_version_fts), "  # noqa: S608 - constant SQL, bound values
                "highlight(memory_version_fts, 0, '[', ']'), "
                "highlight(memory_version_fts, 1, '[', ']'), "
                "highlight(memory_version_fts, 2, '[', ']') "
                "FROM memory_version_fts JOIN memory_memoryversion v "
                "ON v.id = memory_version_fts.rowid "
                f"WHERE memory_version_fts MATCH %s AND {where} LIMIT %s",
                [match, *params, SCAN],
            )
            for *row, field_hl, statement_hl, value_hl in hits:
                members = zip(
                    ("field", "statement", "value"), (field_hl, statement_hl, value_hl), strict=True
                )
                matched = [name for name, text in members if text and "[" in str(text)]
                rows.append((*row, matched))
        ids = list(named)
        if ids:
            by_entity = _rows(
                f"SELECT {_VERSION_COLUMNS}, 0.0 FROM memory_memoryversion v WHERE {where} "  # noqa: S608 - constant SQL, bound values
                f"AND (v.subject_id IN ({_in(ids)}) OR v.id IN (SELECT r.version_id FROM "
                f"memory_entityreference r WHERE r.tenant_id = %s AND r.entity_id IN ({_in(ids)})))"
                " LIMIT %s",
                [*params, *ids, tenant, *ids, SCAN],
            )
            rows += [(*row, []) for row in by_entity]
        return _version_candidates(rows, query, named)

    def sources(self, tenant: int, labels: frozenset[str], q: str) -> list[Candidate]:
        match = fts5_query(q)
        if not match:
            return []
        allowed = allowed_labels(labels)
        rows = _rows(
            "SELECT s.id, s.kind, s.external_ref, s.content, s.revoked_at, "  # noqa: S608 - constant SQL, bound values
            "-bm25(memory_source_fts) FROM memory_source_fts "
            "JOIN memory_source s ON s.rowid = memory_source_fts.rowid "
            "WHERE memory_source_fts MATCH %s AND s.tenant_id = %s AND s.content IS NOT NULL "
            f"AND EXISTS (SELECT 1 FROM json_each(s.visibility) label "
            f"WHERE label.value IN ({_in(allowed)})) "
            "ORDER BY 6 DESC, s.id LIMIT %s",
            [match, tenant, *allowed, RANKED],
        )
        return _source_candidates(rows)
