"""Discovery: which entities, facts and sources a text is about (docs/api.md, Search).

Scoped in this order, all in SQL: the caller's tenant, its visibility labels, then the
subject and filters, then ranking. Answers are candidates (ids, one line, status, why
matched), never facts to act on: to use a fact the agent resolves its subject.

The query is parsed once, in Python (memory.search_terms: words, "phrases", ``or``,
``-word``, stop words dropped, accents folded); PostgreSQL reads the GIN indexes of
memory.fulltext with a ``to_tsquery`` of those terms (names also by ``pg_trgm`` word
similarity), SQLite its FTS5 tables with a MATCH of the same terms.

A version is found by its own text (field, statement, value), or through an entity the
text names: its subject's or a referenced entity's name, alias or external ref. Each word
(a group of terms) a candidate has, in its text or through such an entity, is what it
covers: when some candidate covers every word, the answer is those (``match: all``); when
none does, candidates are ranked by the words they cover, rare words weighing more, and
the answer says so (``match: some``). Stop words and question filler (``would``, ``get``)
never make a partial match: a question whose other words match nothing finds nothing.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from core.principals import Principal
from core.sql import fetched
from memory import fulltext, search_names, search_terms
from memory.models import OPEN_STATUSES, Alias, Status
from memory.references import references_of
from memory.visibility import allowed_labels, visible_sql

DEFAULT_STATUSES: tuple[str, ...] = (Status.ACTIVE, *OPEN_STATUSES)  # in use or may be
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
# transposition ("norhtwind", 0.43) is kept by its edit distance (``search_terms.one_edit``).
NEAR_SCAN = 0.4
ENTITY_BONUS = 0.5  # a fact about an entity the query names ranks above mere word hits
MATCH_ALL = "all"  # every candidate has every word of the query
MATCH_SOME = "some"  # none had them all: candidates ranked by the words they have
SUBJECT_SHARE = 0.95  # a fact through its subject ranks just below the subject itself
REFERENCED_SHARE = 0.9  # and through an entity its value references, below that
NEAR_RATIO = search_terms.NEAR_RATIO
PARTIAL_WEIGHT = 0.8  # of a partial match's score, the share of the words it covers


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


@dataclass
class Found:
    """The candidates, best first, and whether they have every word (``MATCH_ALL``)."""

    candidates: list[Candidate]
    match: str
    # The entities the query names most, whose facts were read through them (``FOLLOW``).
    named: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Mention:
    """An entity the query names, wholly or in part, and the groups its names hold."""

    candidate: Candidate
    covers: frozenset[int]


def lexical(principal: Principal, query: SearchQuery, *, by_meaning: bool = False) -> Found:
    """Every candidate by its words, best first (at most ``RANKED`` of each type). The
    caller binds on the server (psycopg then prepares the statements: planning them is a
    third of a search's time) in one transaction: memory.hybrid.

    ``by_meaning``: semantic retrieval reads the facts of the entities a partial query
    names by meaning, so the words alone are not looked up across the tenant for it."""
    backend = _backend()
    tenant, labels = principal.tenant.pk, principal.labels
    terms = search_terms.parse(query.q)
    every = frozenset(range(len(terms.groups)))
    entities = _as_named(tenant, backend.entities(tenant, query.q), terms)
    mentions = _mentions(backend.mentioned(tenant, terms), terms)
    for entity in entities:
        # A near spelling of the query as a whole covers only the words near the name's.
        covers = every if entity.score >= FOLLOW_SCORE else _near_covers(entity, terms)
        if covers:
            mentions[entity.id] = Mention(entity, covers)
    entities = [e for e in entities if e.id in mentions and mentions[e.id].covers == every]
    followed = _followed(mentions, terms)
    names = [str(m.candidate.body["name"]) for m in followed.values()]
    query = dataclasses.replace(query, q=search_terms.phrased(query.q, names))
    rows = backend.versions(tenant, labels, query, list(followed))
    references = references_of([row[0] for row in rows])
    covered = _covered(backend, rows, references, followed, terms, every, prefix=False)
    facts = _version_candidates(rows, references, covered, followed)
    whole = [c for c in facts if covered.get(c.row or 0) == every]
    if not query.facts_only:
        whole += entities
        whole += backend.sources(tenant, labels, query.q)
    if whole or not every:
        whole.sort(key=lambda c: c.key)
        return Found(whole, MATCH_ALL, frozenset(followed))
    partial = _partial(backend, principal, query, terms, mentions, followed, by_meaning)
    # Nothing at all is an honest empty answer, not a partial one.
    return Found(partial, MATCH_SOME if partial else MATCH_ALL, frozenset(followed))


def _as_named(tenant: int, entities: list[Candidate], terms: search_terms.Terms) -> list[Candidate]:
    """The entities found, the same on both backends (issue 44): none whose name, alias
    or external ref holds an excluded term (PostgreSQL's near spellings and SQLite's
    aliases each let one through), each named as matched by the members that hold a term
    of the query (PostgreSQL's text search reads name and ref as one text, SQLite names
    one column): a near spelling alone keeps the backend's reason."""
    if not entities:
        return entities
    aliases: dict[str, list[str]] = {}
    for entity_id, alias in Alias.objects.filter(
        tenant_id=tenant, entity_id__in=[e.id for e in entities]
    ).values_list("entity_id", "alias"):
        aliases.setdefault(entity_id, []).append(alias)

    def words(*texts: str) -> set[str]:
        return set(search_terms.WORDS.findall(search_terms.fold(_identified(" ".join(texts)))))

    positive = [t for group in terms.groups for t in group]
    kept = []
    for entity in entities:
        name, ref = str(entity.body["name"]), str(entity.body["external_ref"] or "")
        every = words(name, ref, *aliases.get(entity.id, ()))
        if any(search_terms.holds(every, t) for t in terms.excluded):
            continue
        members = (
            ("name", [name]),
            ("external_ref", [ref] if ref else []),
            ("alias", aliases.get(entity.id, [])),
        )
        holding = {
            member
            for member, texts in members
            if any(search_terms.holds(words(text), t) for text in texts for t in positive)
        }
        if holding:  # else only a near spelling found it: the backend's reason stands
            entity.matched = holding
        kept.append(entity)
    return kept


def _mentions(
    found: list[tuple[Candidate, set[str]]], terms: search_terms.Terms
) -> dict[str, Mention]:
    """Entities whose name, alias or external ref holds a whole group of the query, each
    scored by how much of its name the query holds (all of it: a full match's score)."""
    mentions: dict[str, Mention] = {}
    for candidate, tokens in found:
        covers = frozenset(
            i
            for i, group in enumerate(terms.groups)
            if any(
                set(t.words) <= tokens or (t.joined is not None and t.joined in tokens)
                for t in group
            )
        )
        if not covers or any(search_terms.holds(tokens, t) for t in terms.excluded):
            continue  # an entity the query excludes is not followed to its facts either
        name = set(search_terms.fold(str(candidate.body["name"])).split())
        said = {w for i in covers for t in terms.groups[i] for w in t.words}
        share = len(name & said) / max(len(name), 1)
        candidate.score = FOLLOW_SCORE * (0.8 + 0.2 * share)
        mentions[candidate.id] = Mention(candidate, covers)
    return mentions


def _countable(terms: search_terms.Terms) -> frozenset[int]:
    """The groups a partial match may count: not only stop words or question filler."""
    return frozenset(i for i, group in enumerate(terms.groups) if any(not t.filler for t in group))


def _followed(mentions: dict[str, Mention], terms: search_terms.Terms) -> dict[str, Mention]:
    """The entities whose facts are read: those naming a countable group, none named in
    part where another is named more ("Dana Kim", not Dana Whitfield), the best ``FOLLOW``."""
    naming = {e: m.covers for e, m in mentions.items() if m.covers & _countable(terms)}
    ranked = sorted(
        (mentions[e] for e in search_terms.most_named(naming)),
        key=lambda m: (-len(m.covers), -m.candidate.score, m.candidate.id),
    )
    return {m.candidate.id: m for m in ranked[:FOLLOW]}


def _covered(
    backend: _Backend,
    rows: list[tuple[Any, ...]],
    references: dict[int, list[str]],
    followed: dict[str, Mention],
    terms: search_terms.Terms,
    every: frozenset[int],
    *,
    prefix: bool,
) -> dict[int, frozenset[int]]:
    """The groups each version row covers: all for a match of every word; else those its
    subject's and referenced entities' names hold and those its own text matches."""
    covered: dict[int, frozenset[int]] = {}
    unsure: list[int] = []
    for row in rows:
        version_id, subject, rank, hits = row[0], row[4], row[8], row[9]
        if version_id in covered:
            continue
        if (rank and rank > 0) or hits:
            covered[version_id] = every
            continue
        through = [subject, *references.get(version_id, ())]
        groups = frozenset().union(*(followed[e].covers for e in through if e in followed))
        covered[version_id] = groups
        if groups != every:
            unsure.append(version_id)
    if unsure:
        texts = backend.groups_of(unsure, terms, prefix=prefix)
        for version_id in unsure:
            covered[version_id] = covered[version_id] | texts.get(version_id, frozenset())
    return covered


def _partial(
    backend: _Backend,
    principal: Principal,
    query: SearchQuery,
    terms: search_terms.Terms,
    mentions: dict[str, Mention],
    followed: dict[str, Mention],
    by_meaning: bool = False,
) -> list[Candidate]:
    """No candidate has every word: facts and entities with any countable one, ranked by
    the words they have, each weighing less the more candidates have it."""
    countable = _countable(terms)
    if not countable:
        return []
    tenant, labels = principal.tenant.pk, principal.labels
    every = frozenset(range(len(terms.groups)))
    rows = backend.versions(tenant, labels, query, list(followed), text=False)
    for i in sorted(countable):
        if by_meaning and followed:
            break  # the named entities' facts are read by meaning (memory.hybrid)
        rows += backend.versions_of_group(tenant, labels, query, terms, i)
    references = references_of([row[0] for row in rows])
    covered = _covered(backend, rows, references, followed, terms, every, prefix=True)
    hits = dict.fromkeys(countable, 0)
    for groups in covered.values():
        for i in groups & countable:
            hits[i] += 1
    for mention in mentions.values():
        for i in mention.covers & countable:
            hits[i] += 1
    weight = {i: 1.0 / (1.0 + math.log(n)) for i, n in hits.items() if n}
    total = sum(weight.values())
    if not total:
        return []

    def share(groups: frozenset[int]) -> float:
        return sum(weight.get(i, 0.0) for i in groups) / total

    candidates = []
    for fact in _version_candidates(rows, references, covered, followed):
        have = share(covered.get(fact.row or 0, frozenset()))
        if have:
            fact.score = PARTIAL_WEIGHT * have + (1 - PARTIAL_WEIGHT) * fact.score
            candidates.append(fact)
    if not query.facts_only:
        for mention in mentions.values():
            have = share(mention.covers)
            if have:
                entity = dataclasses.replace(mention.candidate)
                entity.score = PARTIAL_WEIGHT * have + (1 - PARTIAL_WEIGHT) * entity.score
                candidates.append(entity)
    candidates.sort(key=lambda c: c.key)
    return candidates


def explain(candidates: list[Candidate], q: str, match: str = MATCH_ALL) -> None:
    """Say which members (field, statement, value) matched, for the candidates shown: of a
    partial match, those with any of the words."""
    _backend().explain(candidates, q, match)


def _backend() -> _Backend:
    return _Postgres() if connection.vendor == "postgresql" else _Sqlite()


def one_line(text: str | None) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= LINE else line[: LINE - 1].rstrip() + "…"


def _text_score(rank: float, norm: str, external_ref: str | None) -> float:
    """An entity every word of the query matched, not exactly: by its rank and, when the
    words are parts of its external ref, by how much of the ref they are ("1001" is half
    of ORD-1001 and a third of CRM-C-1001)."""
    parts = search_terms.PART.findall(search_terms.fold(external_ref or ""))
    said = set(search_terms.PART.findall(norm))
    share = len(said & set(parts)) / len(parts) if parts else 0.0
    return FOLLOW_SCORE + _fraction(rank) / 10 + share * 0.15


def _near_covers(candidate: Candidate, terms: search_terms.Terms) -> frozenset[int]:
    """The groups a near spelling of a name covers: those with a word near a word of the
    name (one edit or swap, or mostly the same letters)."""
    name = search_terms.WORDS.findall(search_terms.fold(str(candidate.body["name"])))

    def near(word: str) -> bool:
        return any(
            search_terms.one_edit(word, n)
            or difflib.SequenceMatcher(None, word, n).ratio() >= NEAR_RATIO
            for n in name
        )

    return frozenset(
        i
        for i, group in enumerate(terms.groups)
        if any(all(near(w) for w in t.words) for t in group)
    )


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
        ids: list[str],
        *,
        text: bool = True,
    ) -> list[tuple[Any, ...]]:
        """Rows matching every word (``text``), then the facts of the entities ``ids``."""
        raise NotImplementedError

    def versions_of_group(
        self,
        tenant: int,
        labels: frozenset[str],
        query: SearchQuery,
        terms: search_terms.Terms,
        group: int,
    ) -> list[tuple[Any, ...]]:
        """Rows whose text has the group's words, long words as prefixes (``SCAN``)."""
        raise NotImplementedError

    def groups_of(
        self, version_ids: list[int], terms: search_terms.Terms, *, prefix: bool
    ) -> dict[int, frozenset[int]]:
        """The groups each version's own text matches."""
        raise NotImplementedError

    def entity_rows(self, tenant: int, terms: search_terms.Terms) -> list[tuple[Any, ...]]:
        """Live entities whose name or external ref has a group of ``terms``, at most
        ``ENTITY_SCAN`` a group: a common word ("customer", thousands of names) leaves
        room for the rare one beside it ("30948"), whose entity the query names."""
        raise NotImplementedError

    def mentioned(self, tenant: int, terms: search_terms.Terms) -> list[tuple[Candidate, set[str]]]:
        """Entities the query names in part, each with the folded words of its name,
        aliases and external ref (identifiers whole and by their parts). Groups of stop
        words and question filler name no one (``_countable``)."""
        countable = _countable(terms)
        asked = tuple(g for i, g in enumerate(terms.groups) if i in countable)
        if not asked:
            return []
        rows = self.entity_rows(tenant, search_terms.Terms(asked, ()))
        aliases: dict[str, list[str]] = {}
        for entity_id, alias in Alias.objects.filter(
            tenant_id=tenant, entity_id__in=[row[0] for row in rows]
        ).values_list("entity_id", "alias"):
            aliases.setdefault(entity_id, []).append(alias)
        found = []
        for row in rows:
            text = " ".join([row[2], row[3] or "", *aliases.get(row[0], ())])
            words = set(search_terms.WORDS.findall(search_terms.fold(_identified(text))))
            found.append((entity_candidate(tuple(row), 0.0, {"name"}), words))
        return found

    def sources(self, tenant: int, labels: frozenset[str], q: str) -> list[Candidate]:
        raise NotImplementedError

    def explain(self, candidates: list[Candidate], q: str, match: str) -> None:
        """Name the members a text match was found in (SQLite knows them already)."""


def _identified(text: str) -> str:
    return search_terms.with_identifiers(text)


def _excluded(q: str) -> search_terms.Terms | None:
    """The query's excluded terms as one positive group (any of them), else None."""
    excluded = search_terms.parse(q).excluded
    return search_terms.Terms((excluded,), ()) if excluded else None


def _group_terms(terms: search_terms.Terms, group: int) -> search_terms.Terms:
    """One group of the query alone, the exclusions kept."""
    return search_terms.Terms((terms.groups[group],), terms.excluded)


def _any_terms(terms: search_terms.Terms) -> search_terms.Terms:
    """Any positive term of the query: what a partial match's members are named by."""
    return search_terms.Terms((tuple(t for g in terms.groups for t in g),), ())


def entity_candidate(row: tuple[Any, ...], score: float, matched: set[str]) -> Candidate:
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
            by_id[row[0]] = entity_candidate(row, score, {how})
        else:
            held.score = max(held.score, score)
            held.matched.add(how)
    ranked = sorted(by_id.values(), key=lambda c: c.key)
    return ranked[:ENTITY_SCAN]


def _version_candidates(
    rows: list[tuple[Any, ...]],
    references: dict[int, list[str]],
    covered: dict[int, frozenset[int]],
    followed: dict[str, Mention],
) -> list[Candidate]:
    """Rows (id, item_id, number, kind, subject_id, field, statement, status, rank, hits),
    ``hits`` naming the members the text matched; a fact through an entity the query
    names ranks just below that entity."""
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
        through: set[int] = set()
        if subject in followed:
            matched.add("subject")
            through |= followed[subject].covers
            score = max(score, followed[subject].candidate.score * SUBJECT_SHARE)
        named = [followed[e] for e in referenced if e in followed]
        if named:
            matched.add("referenced_entity")
            through = through.union(*(m.covers for m in named))
            best = max(m.candidate.score for m in named)
            score = max(score, best * REFERENCED_SHARE)
        if not hits and covered.get(version_id, frozenset()) - through:
            matched.add(TEXT)  # some words in its own text: ``explain`` names the members
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


def narrowing(tenant: int, query: SearchQuery) -> tuple[str, list[Any]]:
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


def _readable_versions(
    tenant: int, labels: frozenset[str], query: SearchQuery
) -> tuple[str, list[Any]]:
    """The tenant's versions in the asked statuses that ``labels`` may read (PostgreSQL)."""
    visible, visible_params = visible_sql("v.required_visibility", labels, "postgresql")
    where = f"v.{fulltext.TENANT} AND v.status = ANY(%s) AND v.erased_at IS NULL AND {visible}"
    return where, [tenant, list(query.statuses), *visible_params]


_LIVE = search_names.LIVE
_VERSION_COLUMNS = "v.id, v.item_id, v.number, v.kind, v.subject_id, v.field, v.statement, v.status"


class _Postgres(_Backend):
    """Each way of matching is its own LIMITed branch, so each reads its own index."""

    def entities(self, tenant: int, q: str) -> list[Candidate]:
        norm = search_terms.positive_text(q)
        cols = "e.id, e.kind, e.name, e.external_ref, e.erased_at"
        text = fetched(
            f"SELECT {cols}, ts_rank({fulltext.ENTITY_DOCUMENT}, query), "  # noqa: S608 - constant SQL, bound values
            "e.external_ref = %s "
            f"FROM memory_entity e, to_tsquery('{fulltext.NAME_CONFIG}', %s) query "
            f"WHERE e.{fulltext.TENANT} AND {fulltext.ENTITY_DOCUMENT} @@ query "
            f"AND {_LIVE} LIMIT %s",
            [q.strip(), _tsquery(q), tenant, SCAN],
        )
        found: list[tuple[tuple[Any, ...], float, str]] = []
        for *row, rank, is_ref in text:
            if is_ref or search_terms.fold(row[3] or "") == norm:
                found.append((tuple(row), 1.0, "external_ref"))
            else:
                named = " ".join(search_terms.fold(row[2]).split())
                how = "name" if norm in named else "external_ref"
                exact = norm == named
                score = 1.0 if exact else _text_score(rank, norm, row[3])
                found.append((tuple(row), score, how))
        near = search_names.near_on_postgresql(tenant, norm, SIMILARITY, SCAN)
        if not found and not near:
            # A typo below the threshold: read once more, lower, keep what is one edit away.
            near = search_names.near_on_postgresql(tenant, norm, NEAR_SCAN, SCAN)
        for entity, normalized, sim, way in near:
            folded = " ".join(search_terms.fold(normalized).split())
            score = 1.0 if way == "alias" and folded == norm else _near(norm, folded, sim)
            if score:
                found.append((entity, score, way))
        return _merge_entities(found)

    def _text_rows(
        self, tenant: int, labels: frozenset[str], query: SearchQuery, tsquery: str
    ) -> list[tuple[Any, ...]]:
        doc = fulltext.VERSION_DOCUMENT
        where, params = _readable_versions(tenant, labels, query)
        kind, kind_params = narrowing(tenant, dataclasses.replace(query, subject=None))
        text = f"{where}{kind} AND {doc} @@ to_tsquery('{fulltext.TEXT_CONFIG}', %s)"
        text_params = [*params, *kind_params, tsquery]
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
        ranked = fulltext.RANKED_VERSION_DOCUMENT
        return fetched(
            f"SELECT {_VERSION_COLUMNS}, ts_rank_cd({ranked}, query), ARRAY['{TEXT}'] "  # noqa: S608 - constant SQL, bound values
            f"FROM memory_memoryversion v, to_tsquery('{fulltext.TEXT_CONFIG}', %s) query "
            f"WHERE v.id IN ({matching})",
            [tsquery, *matching_params],
        )

    def versions(
        self,
        tenant: int,
        labels: frozenset[str],
        query: SearchQuery,
        ids: list[str],
        *,
        text: bool = True,
    ) -> list[tuple[Any, ...]]:
        rows = self._text_rows(tenant, labels, query, _tsquery(query.q)) if text else []
        where, params = _readable_versions(tenant, labels, query)
        narrow, narrow_params = narrowing(tenant, query)
        where += narrow
        params += narrow_params
        excluded = _excluded(query.q)
        if excluded:  # an excluded word excludes what is found through an entity too
            where += (
                f" AND NOT {fulltext.VERSION_DOCUMENT} @@ to_tsquery('{fulltext.TEXT_CONFIG}', %s)"
            )
            params.append(search_terms.tsquery(excluded))
        if ids:
            # Through the entities the text names: their own facts and those referencing
            # them, each branch on its own index; ranked by the entity, no text work.
            rows += fetched(
                f"SELECT {_VERSION_COLUMNS}, 0.0, ARRAY[]::text[] FROM memory_memoryversion v "  # noqa: S608 - constant SQL, bound values
                f"WHERE v.id IN ((SELECT v.id FROM memory_memoryversion v WHERE {where} "
                "AND v.subject_id = ANY(%s) LIMIT %s) UNION (SELECT v.id FROM "
                f"memory_memoryversion v WHERE {where} AND v.id IN (SELECT r.version_id FROM "
                "memory_entityreference r WHERE r.tenant_id = %s AND r.entity_id = ANY(%s)) "
                "LIMIT %s))",
                [*params, ids, SCAN, *params, tenant, ids, SCAN],
            )
        return rows

    def versions_of_group(
        self,
        tenant: int,
        labels: frozenset[str],
        query: SearchQuery,
        terms: search_terms.Terms,
        group: int,
    ) -> list[tuple[Any, ...]]:
        tsquery = search_terms.tsquery(_group_terms(terms, group), prefix=True)
        return [(*row[:8], 0.0, []) for row in self._text_rows(tenant, labels, query, tsquery)]

    def groups_of(
        self, version_ids: list[int], terms: search_terms.Terms, *, prefix: bool
    ) -> dict[int, frozenset[int]]:
        config = fulltext.TEXT_CONFIG
        tests = ", ".join(f"d.doc @@ to_tsquery('{config}', %s)" for _ in terms.groups)
        queries = [
            search_terms.tsquery(search_terms.Terms((group,), ()), prefix=prefix)
            for group in terms.groups
        ]
        # OFFSET 0: flattened, the subquery would make each row's document once per group.
        rows = fetched(
            f"SELECT d.id, ARRAY[{tests}] FROM (SELECT v.id, "  # noqa: S608 - constant SQL, bound values
            f"{fulltext.RANKED_VERSION_DOCUMENT} AS doc FROM memory_memoryversion v "
            "WHERE v.id = ANY(%s) OFFSET 0) d",
            [*queries, version_ids],
        )
        return {
            version_id: frozenset(i for i, hit in enumerate(hits) if hit)
            for version_id, hits in rows
        }

    def entity_rows(self, tenant: int, terms: search_terms.Terms) -> list[tuple[Any, ...]]:
        return search_names.on_postgresql(tenant, terms.groups, ENTITY_SCAN)

    def explain(self, candidates: list[Candidate], q: str, match: str) -> None:
        rows = [c.row for c in candidates if c.row is not None and TEXT in c.matched]
        if not rows:
            return
        config = fulltext.TEXT_CONFIG
        terms = search_terms.parse(q)
        # Any word: a fact found through its subject has the others in its own members.
        tsquery = search_terms.tsquery(_any_terms(terms), prefix=match == MATCH_SOME)
        ids = fulltext.IDENTIFIERS
        members = dict(
            fetched(
                "SELECT v.id, array_remove(ARRAY["  # noqa: S608 - constant SQL, bound values
                f"CASE WHEN to_tsvector('{config}', {ids}(v.field)) @@ query THEN 'field' END, "
                f"CASE WHEN to_tsvector('{config}', {ids}(v.statement)) @@ query "
                "THEN 'statement' END, "
                f"CASE WHEN to_tsvector('{config}', {ids}(coalesce(v.value::text, ''))) "
                "@@ query THEN 'value' END], NULL) "
                f"FROM memory_memoryversion v, to_tsquery('{config}', %s) query "
                "WHERE v.id = ANY(%s)",
                [tsquery, rows],
            )
        )
        for candidate in candidates:
            found = set(members.get(candidate.row) or ())
            if found and TEXT in candidate.matched:
                candidate.matched = (candidate.matched - {TEXT}) | found

    def sources(self, tenant: int, labels: frozenset[str], q: str) -> list[Candidate]:
        doc = fulltext.SOURCE_DOCUMENT.replace("content", "s.content")
        rows = fetched(
            "SELECT s.id, s.kind, s.external_ref, s.content, s.revoked_at, "  # noqa: S608 - constant SQL, bound values
            f"ts_rank({fulltext.RANKED_SOURCE_DOCUMENT}, query) FROM (SELECT s.id "
            f"FROM memory_source s, to_tsquery('{fulltext.TEXT_CONFIG}', %s) query "
            f"WHERE s.{fulltext.TENANT} AND s.content IS NOT NULL "
            "AND s.visibility ?| %s::text[] "
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
    if any(search_terms.one_edit(w, n) for w in words for n in name.split()):
        return SIMILARITY * NEAR
    return 0.0


TYPO_MIN = 4  # a word shorter than this is one edit from too many others


def _in(values: Sequence[Any]) -> str:
    return ", ".join(["%s"] * len(values))


class _Sqlite(_Backend):
    """``make run``: FTS5 tables (external content, kept by triggers) joined by rowid."""

    def entities(self, tenant: int, q: str) -> list[Candidate]:
        match = fts5_query(q)
        norm = search_terms.positive_text(q)
        cols = "e.id, e.kind, e.name, e.external_ref, e.erased_at"
        found: list[tuple[tuple[Any, ...], float, str]] = []
        if match:
            rows = fetched(
                f"SELECT {cols}, -bm25(memory_entity_fts), "  # noqa: S608 - constant SQL, bound values
                "highlight(memory_entity_fts, 0, '[', ']') LIKE '%%[%%' "
                "FROM memory_entity_fts JOIN memory_entity e ON e.rowid = memory_entity_fts.rowid "
                f"WHERE memory_entity_fts MATCH %s AND e.tenant_id = %s AND {_LIVE} LIMIT %s",
                [match, tenant, SCAN],
            )
            for *row, rank, on_name in rows:
                exact = norm in (search_terms.fold(row[2]), search_terms.fold(row[3] or ""))
                how = "name" if on_name else "external_ref"
                score = 1.0 if exact else _text_score(rank, norm, row[3])
                found.append((tuple(row), score, how))
            aliases = fetched(
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

    def _where(
        self, tenant: int, labels: frozenset[str], query: SearchQuery
    ) -> tuple[str, list[Any]]:
        visible, visible_params = visible_sql("v.required_visibility", labels, "sqlite")
        where = (
            f"v.tenant_id = %s AND v.status IN ({_in(query.statuses)}) AND v.erased_at IS NULL "
            f"AND {visible}"
        )
        params: list[Any] = [tenant, *query.statuses, *visible_params]
        narrow, narrow_params = narrowing(tenant, query)
        return where + narrow, params + narrow_params

    def _text_rows(
        self, tenant: int, labels: frozenset[str], query: SearchQuery, match: str
    ) -> list[tuple[Any, ...]]:
        where, params = self._where(tenant, labels, query)
        hits = fetched(
            f"SELECT {_VERSION_COLUMNS}, -bm25(memory_version_fts), "  # noqa: S608 - constant SQL, bound values
            "highlight(memory_version_fts, 0, '[', ']'), "
            "highlight(memory_version_fts, 1, '[', ']'), "
            "highlight(memory_version_fts, 2, '[', ']') "
            "FROM memory_version_fts JOIN memory_memoryversion v "
            "ON v.id = memory_version_fts.rowid "
            f"WHERE memory_version_fts MATCH %s AND {where} LIMIT %s",
            [match, *params, SCAN],
        )
        rows: list[tuple[Any, ...]] = []
        for *row, field_hl, statement_hl, value_hl in hits:
            members = zip(
                ("field", "statement", "value"), (field_hl, statement_hl, value_hl), strict=True
            )
            matched = [name for name, text in members if text and "[" in str(text)]
            rows.append((*row, matched))
        return rows

    def versions(
        self,
        tenant: int,
        labels: frozenset[str],
        query: SearchQuery,
        ids: list[str],
        *,
        text: bool = True,
    ) -> list[tuple[Any, ...]]:
        match = fts5_query(query.q)
        rows = self._text_rows(tenant, labels, query, match) if text and match else []
        where, params = self._where(tenant, labels, query)
        excluded = _excluded(query.q)
        if excluded:  # an excluded word excludes what is found through an entity too
            where += (
                " AND v.id NOT IN (SELECT rowid FROM memory_version_fts "
                "WHERE memory_version_fts MATCH %s)"
            )
            params.append(search_terms.fts5(excluded))
        if ids:
            by_entity = fetched(
                f"SELECT {_VERSION_COLUMNS}, 0.0 FROM memory_memoryversion v WHERE {where} "  # noqa: S608 - constant SQL, bound values
                f"AND (v.subject_id IN ({_in(ids)}) OR v.id IN (SELECT r.version_id FROM "
                f"memory_entityreference r WHERE r.tenant_id = %s AND r.entity_id IN ({_in(ids)})))"
                " LIMIT %s",
                [*params, *ids, tenant, *ids, SCAN],
            )
            rows += [(*row, []) for row in by_entity]
        return rows

    def versions_of_group(
        self,
        tenant: int,
        labels: frozenset[str],
        query: SearchQuery,
        terms: search_terms.Terms,
        group: int,
    ) -> list[tuple[Any, ...]]:
        match = search_terms.fts5(_group_terms(terms, group), prefix=True)
        return [(*row[:8], 0.0, []) for row in self._text_rows(tenant, labels, query, match)]

    def groups_of(
        self, version_ids: list[int], terms: search_terms.Terms, *, prefix: bool
    ) -> dict[int, frozenset[int]]:
        found: dict[int, set[int]] = {}
        for i, group in enumerate(terms.groups):
            match = search_terms.fts5(search_terms.Terms((group,), ()), prefix=prefix)
            for (version_id,) in fetched(
                "SELECT rowid FROM memory_version_fts WHERE memory_version_fts MATCH %s "  # noqa: S608 - constant SQL, bound values
                f"AND rowid IN ({_in(version_ids)})",
                [match, *version_ids],
            ):
                found.setdefault(version_id, set()).add(i)
        return {version_id: frozenset(groups) for version_id, groups in found.items()}

    def entity_rows(self, tenant: int, terms: search_terms.Terms) -> list[tuple[Any, ...]]:
        return search_names.on_sqlite(tenant, terms.groups, ENTITY_SCAN)

    def explain(self, candidates: list[Candidate], q: str, match: str) -> None:
        """Members of a fact not found by its text alone, by any word (those found by
        their text are known)."""
        rows = [c.row for c in candidates if c.row is not None and TEXT in c.matched]
        if not rows:
            return
        terms = search_terms.parse(q)
        expression = search_terms.fts5(_any_terms(terms), prefix=match == MATCH_SOME)
        members: dict[int, set[str]] = {}
        for version_id, *highlights in fetched(
            "SELECT rowid, highlight(memory_version_fts, 0, '[', ']'), "  # noqa: S608 - constant SQL, bound values
            "highlight(memory_version_fts, 1, '[', ']'), "
            "highlight(memory_version_fts, 2, '[', ']') FROM memory_version_fts "
            f"WHERE memory_version_fts MATCH %s AND rowid IN ({_in(rows)})",
            [expression, *rows],
        ):
            names = ("field", "statement", "value")
            members[version_id] = {
                n for n, h in zip(names, highlights, strict=True) if h and "[" in str(h)
            }
        for candidate in candidates:
            found = members.get(candidate.row or 0)
            if found and TEXT in candidate.matched:
                candidate.matched = (candidate.matched - {TEXT}) | found

    def sources(self, tenant: int, labels: frozenset[str], q: str) -> list[Candidate]:
        match = fts5_query(q)
        if not match:
            return []
        allowed = allowed_labels(labels)
        rows = fetched(
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
