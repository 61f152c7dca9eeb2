"""Search by words and by meaning together (docs/api.md, Search; decision 0022).

Lexical search (memory.search) answers first, and its answer stands where it is sure:
when facts or entities have every word of the query (``match: all``) they are the
answer, in their order, and meaning only says which of them are also near (``semantic``
in ``matched``); sources alone with every word are evidence, not an answer. Otherwise —
a paraphrase, a misspelling, a question in other words — the candidates near in meaning
join those with some of the words, the two rankings fused by reciprocal rank (``match:
some``), and each must answer the question, not only name its subject (``_answers``): a
fact found by meaning alone must reach ``semantic.MEMORY_FLOOR``, so a question nothing
answers still finds nothing. A query that excludes a word (``-word``) or asks only for
ids adds nothing by meaning. Hidden, erased and other tenants' facts are never read
(memory.semantic filters them in the same statement)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from core.principals import Principal
from core.sql import bound_on_server
from memory import search, search_terms, semantic
from memory.models import Entity, EntityReference, MemoryVersion
from memory.references import references_of
from memory.search import MATCH_ALL, MATCH_SOME, Candidate, Found, SearchQuery

SEMANTIC = "semantic"  # in ``matched``: the candidate is near the query in meaning
NEAREST = 10  # versions read by meaning per query
RRF_K = 10  # reciprocal rank fusion's constant: small, so the first ranks weigh most
LEXICAL_WEIGHT = 1.0
MEANING_WEIGHT = 1.0


@dataclass(frozen=True)
class Meaning:
    """What the query is near: version rows and entity ids, with their similarity."""

    versions: dict[int, float]
    entities: dict[str, float]
    # The entities the query names, each with the query's words its names hold.
    mentioned: dict[str, frozenset[str]] = field(default_factory=dict)
    # The words of the entities looked at (``semantic.entity_words``), read once.
    words: dict[str, set[str]] = field(default_factory=dict)

    @property
    def scoped(self) -> bool:
        """The facts were read among those of the entities the query names."""
        return bool(self.mentioned)

    # The query only names them ("王伟"): their facts are what it asks for, as lexical
    # search lists a named entity's facts.
    name_only: bool = False

    @property
    def floor(self) -> float:
        """How near a fact must be to answer: among a named entity's few facts, the one
        that is somewhat near is what is asked; across the tenant it must be nearer."""
        if self.name_only:
            return -1.0
        return semantic.SCOPED_FLOOR if self.scoped else semantic.MEMORY_FLOOR


def search_hybrid(principal: Principal, query: SearchQuery) -> Found:
    """Every candidate, best first: lexical, with meaning where semantic retrieval is on."""
    with bound_on_server(), transaction.atomic(savepoint=False):
        model = semantic.model()
        terms = search_terms.parse(query.q)
        # An excluded word is a rule about words, and an id is exact: words alone.
        by_meaning = model is not None and not terms.excluded and not _only_identifiers(terms)
        found = search.lexical(principal, query, by_meaning=by_meaning)
        if found.match == MATCH_ALL and any(c.type != "source" for c in found.candidates):
            return found  # facts or entities with every word: the words are sure
        if model is None or not by_meaning:
            return found
        meaning = _meaning(model, principal, query, found, terms)
        return _fused(found, meaning, principal, terms, query.q)


def _remainder(q: str, names: set[str]) -> str:
    """The query without the names it says: what it asks about them."""
    words = search_terms.WORDS.findall(search_terms.fold(search_terms.positive_text(q)))
    return " ".join(w for w in words if len(w) > 1 and not search_terms.named(w, names))


def _meaning(
    model: Any,
    principal: Principal,
    query: SearchQuery,
    found: Found,
    terms: search_terms.Terms,
) -> Meaning:
    """What the query is near. Entities by the whole query. Facts, when the query names
    entities, among theirs only (seed 002: the subject before ranking) and by what it
    asks about them ("where do Dana Kim's parcels go": "where do parcels go"); else
    across the tenant by the whole query."""
    tenant = principal.tenant.pk
    whole = semantic.query_text(search_terms.positive_text(query.q))
    by_words = set(found.named)  # named by their words, most of them
    words = semantic.entity_words(sorted(by_words)) if by_words else {}
    said = _asked_words(terms)
    by_names = not query.facts_only and not _names_only_known(query.q, by_words, words)
    # What the query asks of the entities its words name is embedded with the whole query,
    # in one forward pass (two texts cost what one does): meaning seldom names others.
    guess = _asked(query.q, _named(said, words, by_words, set()), words)
    texts = [whole] if by_names or not guess else []
    vectors = _Vectors(model, texts + ([guess] if guess else []))
    entities = []
    if by_names:
        # Another spelling or script of a name ("Chen Jing" for 陈静, beside Sarah Chen).
        entities = semantic.nearest_entities(
            model, tenant, vectors.of(whole), limit=semantic.NEAR_ENTITIES
        )
    # Named by its words, or by another spelling or script ("王伟", "Marta Kowalcyk"):
    # an entity near enough whose names hold a word of the query.
    by_meaning = {n.id for n in entities if n.similarity >= semantic.ENTITY_FLOOR}
    if by_meaning - by_words:
        words |= semantic.entity_words(sorted(by_meaning - by_words))
    named = _named(said, words, by_words, by_meaning)
    narrowing = search.narrowing(tenant, query)
    if named or query.subject:
        # Few rows: their ids by their own indexes first (an OR of subject and reference
        # in one statement reads every version of the tenant), then each compared.
        narrowing = _among(principal, query, sorted(named))
    asked = _asked(query.q, named, words) if named else None
    name_only = bool(named) and asked is None
    versions = semantic.nearest_versions(
        model,
        principal,
        vectors.of(asked or whole),
        statuses=query.statuses,
        narrowing=narrowing,
        limit=NEAREST,
        exact=bool(named or query.subject),  # a few entities' facts: compare each
    )
    return Meaning(
        versions={int(n.id): n.similarity for n in versions},
        entities={n.id: n.similarity for n in entities},
        mentioned=named,
        words=words,
        name_only=name_only,
    )


class _Vectors:
    """The query's texts, each embedded once; those known to be needed in one pass."""

    def __init__(self, model: Any, texts: list[str]) -> None:
        self.model = model
        self.known = dict(zip(texts, semantic.query_vectors(model, texts), strict=True))

    def of(self, text: str) -> list[float]:
        if text not in self.known:
            (self.known[text],) = semantic.query_vectors(self.model, [text])
        return self.known[text]


def _named(
    said: tuple[str, ...], words: dict[str, set[str]], by_words: set[str], by_meaning: set[str]
) -> dict[str, frozenset[str]]:
    """The entities the query names, each with the words of the query its names hold: of
    those named in part, the one named most ("Giorgos Papadopoulos" is Γιώργος
    Παπαδόπουλος, not Papadopoulos Shipping; "Dana Kim" not Dana Whitfield)."""
    held = {
        e: _held(said, words.get(e, set()), near=e in by_meaning) for e in by_words | by_meaning
    }
    return {e: held[e] for e in search_terms.most_named({e: h for e, h in held.items() if h})}


def _asked(q: str, named: dict[str, frozenset[str]], words: dict[str, set[str]]) -> str | None:
    """What the query asks about the entities it names, or None when it only names them."""
    if not named:
        return None
    asked = _remainder(q, set().union(*(words[e] for e in named)))
    return asked if any(w not in search_terms.STOP_WORDS for w in asked.split()) else None


SCOPE_LIMIT = 2000  # versions about the named entities compared one by one


def _among(principal: Principal, query: SearchQuery, named: list[str]) -> tuple[str, list[Any]]:
    """The narrowing to the versions about the named entities (as subject or referenced),
    within the query's own subject and kind, as a list of ids."""
    tenant = principal.tenant.pk
    ids = _versions_about(tenant, [*named, *([query.subject] if query.subject else [])])
    if query.subject:  # within its facts, whatever else the query names
        ids &= _versions_about(tenant, [query.subject], limit=None)
    kind, kind_params = search.narrowing(tenant, SearchQuery(q=query.q, kind=query.kind))
    if not ids:
        return " AND FALSE", []
    marks = ", ".join(["%s"] * len(ids))
    return f"{kind} AND v.id IN ({marks})", [*kind_params, *sorted(ids)]


def _versions_about(
    tenant: int, entity_ids: list[str], *, limit: int | None = SCOPE_LIMIT
) -> set[int]:
    """Versions whose subject is one of these entities or whose value references one."""
    subjects = MemoryVersion.objects.filter(tenant_id=tenant, subject_id__in=entity_ids)
    referencing = EntityReference.objects.filter(tenant_id=tenant, entity_id__in=entity_ids)
    return set(subjects.values_list("pk", flat=True)[:limit]) | set(
        referencing.values_list("version_id", flat=True)[:limit]
    )


def _held(said: tuple[str, ...], names: set[str], *, near: bool) -> frozenset[str]:
    """The query's words an entity's names hold: as they are for one found by its words,
    and misspelled or in other letters too for one found by meaning."""
    if near:
        return frozenset(w for w in said if search_terms.named(w, names))
    return frozenset(w for w in said if w in names)


def _fused(
    found: Found,
    meaning: Meaning,
    principal: Principal,
    terms: search_terms.Terms,
    query_text: str,
) -> Found:
    for candidate in found.candidates:
        if _similarity(candidate, meaning) is not None:
            candidate.matched.add(SEMANTIC)
    lexical_rank = {_key(c): rank for rank, c in enumerate(found.candidates, start=1)}
    added = _by_meaning_alone(meaning, set(lexical_rank), principal)
    asked = _asked_words(terms)
    names = _entity_words(
        meaning, [c.id for c in [*found.candidates, *added] if c.type == "entity"]
    )
    everyone = [*found.candidates, *added]
    if _names_someone_unknown(query_text, everyone, names, ids_only=meaning.scoped):
        return Found([], MATCH_ALL)
    pool = [
        c
        for c in [*found.candidates, *added]
        if c.type == "source"
        or _answers(c, meaning, asked, names.get(c.id, set()), meaning.mentioned)
    ]
    # A query that only names entities finds them first, then their facts (as lexical
    # search ranks a named entity above its facts).
    by_meaning = sorted(
        (c for c in pool if _similarity(c, meaning) is not None),
        key=lambda c: (
            meaning.name_only and c.type != "entity",
            -(_similarity(c, meaning) or 0.0),
            c.key,
        ),
    )
    meaning_rank = {_key(c): rank for rank, c in enumerate(by_meaning, start=1)}
    for candidate in pool:
        key = _key(candidate)
        score = 0.0
        if key in lexical_rank:
            score += LEXICAL_WEIGHT / (RRF_K + lexical_rank[key])
        if key in meaning_rank:
            score += MEANING_WEIGHT / (RRF_K + meaning_rank[key])
        # On a 0..1 scale like lexical scores: 1 for first in both rankings.
        candidate.score = score / ((LEXICAL_WEIGHT + MEANING_WEIGHT) / (RRF_K + 1))
    if meaning.name_only:
        _below_their_entities(pool)
    pool.sort(key=lambda c: c.key)
    return Found(pool[: search.RANKED], MATCH_SOME if pool else MATCH_ALL)


def _entity_words(meaning: Meaning, entity_ids: list[str]) -> dict[str, set[str]]:
    """Their words: those ``_meaning`` read, and the others'."""
    known = {e: meaning.words[e] for e in entity_ids if e in meaning.words}
    missing = [e for e in entity_ids if e not in known]
    return {**known, **(semantic.entity_words(missing) if missing else {})}


def _below_their_entities(pool: list[Candidate]) -> None:
    """A query that only names entities finds them first, each fact just below the
    entity it is about (as lexical search ranks a named entity's facts)."""
    scores = {c.id: c.score for c in pool if c.type == "entity"}
    for candidate in pool:
        if candidate.type != "memory":
            continue
        about = {str(candidate.body.get("subject")), *candidate.body.get("references", ())}
        held = [scores[e] for e in about if e in scores]
        if held:
            candidate.score = min(candidate.score, max(held) * search.SUBJECT_SHARE)


def _links_named(
    candidate: Candidate, mentioned: dict[str, frozenset[str]], *, at_least: int = 2
) -> bool:
    """A fact about two entities the query names by different words ("is Northwind part
    of Globex"), not two that share the word that found them (Dana Kim, Dana Whitfield);
    or, ``at_least=1``, about one of them."""
    about = {str(candidate.body.get("subject")), *candidate.body.get("references", ())}
    covered = [mentioned[e] for e in about if e in mentioned]
    if at_least == 1:
        return bool(covered)
    together = frozenset().union(*covered) if covered else frozenset()
    return len(covered) >= 2 and all(words < together for words in covered)


def _answers(
    candidate: Candidate,
    meaning: Meaning,
    asked: tuple[str, ...],
    names: set[str],
    mentioned: dict[str, frozenset[str]],
) -> bool:
    """Whether a candidate of a partial answer answers the question, not only names its
    subject: a fact with some of the words in its own text, or near enough in meaning; an
    entity whose names hold (or nearly hold) every word asked — a question about it with
    other words ("Dana Kim's favourite colour") is answered by its facts or by nothing."""
    if candidate.type == "entity":
        return bool(asked) and all(search_terms.named(word, names) for word in asked)
    if _links_named(candidate, mentioned):
        return True
    if meaning.name_only and _links_named(candidate, mentioned, at_least=1):
        return True
    own_text = candidate.matched & {search.TEXT, "field", "statement", "value"}
    similarity = _similarity(candidate, meaning)
    return bool(own_text) or (similarity is not None and similarity >= meaning.floor)


_WORD = re.compile(r"\w[\w'\u2019-]*")


def _names_someone_unknown(
    q: str, candidates: list[Candidate], names: dict[str, set[str]], *, ids_only: bool
) -> bool:
    """The query names someone or something no candidate is about: an id nobody has
    ("invoice INV-55555"), or, when it names no known entity, a person or company ("where
    does Olivia Park want deliveries", no Olivia Park stored) — other people's facts do
    not answer it. A name is a capitalized word after the first, not a stop word; an id a
    word with a digit; either unknown when no candidate's name or statement has it."""
    known: set[str] = set().union(*names.values()) if names else set()
    for candidate in candidates:
        statement = str(candidate.body.get("statement") or "")
        known.update(search_terms.WORDS.findall(search_terms.fold(statement)))
    return any(not search_terms.named(part, known) for part in _name_like(q, ids_only=ids_only))


def _name_like(q: str, *, ids_only: bool = False) -> list[str]:
    """The query's words that name someone or something: a word with a digit, and (unless
    ``ids_only``) a capitalized word after the first; folded, without stop words."""
    words = _WORD.findall(q)
    asked = [w for w in words if any(c.isdigit() for c in w)]
    if not ids_only:
        asked += [w for w in words[1:] if w[0].isupper()]
    return [
        part
        for word in asked
        for part in search_terms.WORDS.findall(
            search_terms.fold(search_terms.without_possessive(word))
        )
        if part not in search_terms.STOP_WORDS and part not in search_terms.FILLER
    ]


def _names_only_known(q: str, by_words: set[str], words: dict[str, set[str]]) -> bool:
    """The query names an entity by its whole name and names no one else: another
    spelling of a name need not be looked for by meaning ("when does Customer 123 want
    things shipped"; not "Chen Jing", which Sarah Chen names only in part)."""
    if not by_words:
        return False
    said = set(search_terms.WORDS.findall(search_terms.fold(q)))
    names = Entity.objects.filter(pk__in=by_words).values_list("name", flat=True)
    whole = any(set(search_terms.WORDS.findall(search_terms.fold(n))) <= said for n in names)
    held = set().union(*words.values()) if words else set()
    return whole and all(part in held for part in _name_like(q))


def _asked_words(terms: search_terms.Terms) -> tuple[str, ...]:
    """The query's words that ask something: not stop words or question filler."""
    return tuple(
        w
        for group in terms.groups
        for term in group
        for w in term.words
        if w not in search_terms.STOP_WORDS and w not in search_terms.FILLER
    )


def _only_identifiers(terms: search_terms.Terms) -> bool:
    """``ORD-9999``, ``1001``: every term an identifier or a number."""
    asked = [t for group in terms.groups for t in group if not t.filler]
    return bool(asked) and all(
        t.joined is not None or all(w.isdigit() for w in t.words) for t in asked
    )


def _key(candidate: Candidate) -> tuple[str, str]:
    return (candidate.type, str(candidate.row) if candidate.row else candidate.id)


def _similarity(candidate: Candidate, meaning: Meaning) -> float | None:
    if candidate.type == "memory" and candidate.row is not None:
        return meaning.versions.get(candidate.row)
    if candidate.type == "entity":
        return meaning.entities.get(candidate.id)
    return None


def _by_meaning_alone(
    meaning: Meaning, known: set[tuple[str, str]], principal: Principal
) -> list[Candidate]:
    """Candidates the words did not find, near enough in meaning to be answers."""
    rows = [
        row
        for row, similarity in meaning.versions.items()
        if similarity >= meaning.floor and ("memory", str(row)) not in known
    ]
    entity_ids = [
        entity_id
        for entity_id, similarity in meaning.entities.items()
        if similarity >= semantic.ENTITY_FLOOR and ("entity", entity_id) not in known
    ]
    return _version_candidates(rows, meaning) + _entity_candidates(entity_ids, meaning, principal)


def _version_candidates(rows: list[int], meaning: Meaning) -> list[Candidate]:
    if not rows:
        return []
    references = references_of(rows)
    versions = MemoryVersion.objects.filter(pk__in=rows).values_list(
        "pk", "item_id", "number", "kind", "subject_id", "field", "statement", "status"
    )
    return [
        Candidate(
            type="memory",
            id=item_id,
            row=pk,
            score=meaning.versions[pk],
            matched={SEMANTIC},
            body={
                "version": number,
                "kind": kind,
                "subject": subject,
                "field": field_name,
                "references": sorted(set(references.get(pk, ()))),
                "statement": search.one_line(statement),
                "status": status,
            },
        )
        for pk, item_id, number, kind, subject, field_name, statement, status in versions
    ]


def _entity_candidates(
    entity_ids: list[str], meaning: Meaning, principal: Principal
) -> list[Candidate]:
    if not entity_ids:
        return []
    rows = Entity.objects.filter(
        tenant=principal.tenant, pk__in=entity_ids, erased_at__isnull=True
    ).values_list("id", "kind", "name", "external_ref", "erased_at")
    return [search.entity_candidate(row, meaning.entities[row[0]], {SEMANTIC}) for row in rows]
