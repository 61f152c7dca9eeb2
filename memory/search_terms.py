"""The one query language of search (docs/api.md, Search), parsed once in Python for
both backends (issue 44): each backend builds its own query from the same terms, so
``- Dana`` is ``Dana`` everywhere and ``-Dana`` alone is no query anywhere.

The language: words (all must match), ``"a phrase"``, ``or`` between two terms,
``-word`` or ``-"a phrase"`` (the dash touching it) to exclude. English stop words
("the", "is", …) are not terms: a query needs at least one other word. Text is folded
as the indexes fold it (case, accents, ``ß`` as ``ss``), so ``Jurgen`` finds Jürgen.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

from anyascii import anyascii

# PostgreSQL's english.stop (tsearch_data), the words its English configuration drops:
# the same list on SQLite, so a query means the same on both.
STOP_WORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will
    just don should now""".split()  # noqa: SIM905 - the list as PostgreSQL ships it
)

# Letters no decomposition folds that PostgreSQL's ``unaccent`` rules do (``ß`` and ``ẞ``
# are ``ss`` by ``casefold`` already); SQLite's index applies the same (memory.fulltext).
LETTERS = {"æ": "ae", "œ": "oe", "ø": "o", "ł": "l", "đ": "d"}

# Words a question is made of that say nothing of what is asked about ("who would get
# …"): terms when every word must match, but never what a partial ("some") match counts.
FILLER = frozenset(
    """would could might must shall may get gets got getting let please tell know show give
    find like us also ever anything something everything one much many whose""".split()  # noqa: SIM905 - a word list
)

# An identifier: letters or digits joined by - / _ . : # and holding a digit (ORD-1001,
# SO-77-A/3, CRM-C-1001). Indexed and queried whole ("ord1001") and by its parts.
IDENTIFIER = re.compile(r"[^\W_]+(?:[-/_.:#][^\W_]+)+")
PART = re.compile(r"[^\W_]+")
PREFIX_MIN = 4  # a partial match reads a word of this length or more as a prefix

_TERM = re.compile(r'(-?)"([^"]*)"?|(\S+)')
_WORD = re.compile(r"\w+")
WORDS = _WORD  # how a text is split into words, folded first
_UNQUOTABLE = re.compile(r"['\\]")
_POSSESSIVE = re.compile(r"(?<=\w)['\u2019]s?$")


def without_possessive(word: str) -> str:
    """``Northwind's`` as ``Northwind``: an English possessive names its owner."""
    return _POSSESSIVE.sub("", word)


# Names are folded again by every search that meets them: the last few thousand are
# remembered per process (a few MB at most).
@lru_cache(maxsize=8192)
def fold(text: str) -> str:
    """Casefolded, accents removed, ``ß`` as ``ss``: how names and text are matched."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    for letter, plain in LETTERS.items():
        folded = folded.replace(letter, plain)
    return unicodedata.normalize("NFC", folded)


_SYLLABIC = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL")  # one character, one syllable


def _latin(character: str) -> str:
    if character.isascii():
        return character
    latin = anyascii(character)
    return f" {latin} " if unicodedata.name(character, "").startswith(_SYLLABIC) else latin


@lru_cache(maxsize=8192)
def romanized(text: str) -> str:
    """A name in Latin letters (王伟 → "Wang Wei", Γιώργος → "Giorgos"), or "" when it
    already is: a transliteration makes a candidate, never a match (seed 000)."""
    latin = " ".join("".join(_latin(c) for c in text).split())
    return latin if fold(latin) != " ".join(fold(text).split()) else ""


def identifiers(text: str) -> str:
    """Each identifier of ``text`` whole (its parts joined) and by its parts, as both
    backends' indexes add them to the text (PostgreSQL ``memgov_identifiers``)."""
    found = [m for m in IDENTIFIER.findall(text) if any(c.isdigit() for c in m)]
    return " ".join(f"{''.join(PART.findall(m))} {' '.join(PART.findall(m))}" for m in found)


def with_identifiers(text: str) -> str:
    """``text`` and what ``identifiers`` adds: the indexed document."""
    extra = identifiers(text)
    return f"{text} {extra}" if extra else text


@dataclass(frozen=True)
class Term:
    """A word or a phrase: its words, folded, in order (stop words kept inside a phrase,
    where they are part of what it says), and its folded text for PostgreSQL's parser,
    which reads "crm-0042" as the index read it."""

    words: tuple[str, ...]
    text: str

    @property
    def joined(self) -> str | None:
        """The identifier this term is, its parts joined ("ord1001"), else None."""
        if len(self.words) < 2 or not IDENTIFIER.fullmatch(self.text):
            return None
        return "".join(self.words) if any(c.isdigit() for c in self.text) else None

    @property
    def filler(self) -> bool:
        return all(w in STOP_WORDS or w in FILLER for w in self.words)


@dataclass(frozen=True)
class Terms:
    """All of ``groups`` must match (a group: any of its terms), none of ``excluded``."""

    groups: tuple[tuple[Term, ...], ...]
    excluded: tuple[Term, ...]

    def __bool__(self) -> bool:
        return bool(self.groups)

    @property
    def words(self) -> tuple[str, ...]:
        """Every positive word, in order, once."""
        seen = dict.fromkeys(w for group in self.groups for term in group for w in term.words)
        return tuple(seen)


def _term(text: str) -> Term | None:
    folded = fold(text)
    words = tuple(_WORD.findall(folded))
    if not any(w not in STOP_WORDS for w in words):
        return None  # nothing but stop words (or no word): no term at all
    # No quote or backslash reaches a quoted tsquery value; operators inside one are text.
    return Term(words, " ".join(_UNQUOTABLE.sub(" ", folded).split()))


def parse(q: str) -> Terms:
    """The terms of ``q``; empty (false) when no positive term is left."""
    groups: list[list[Term]] = []
    excluded: list[Term] = []
    join_or = False
    for match in _TERM.finditer(q):
        negate, phrase, bare = match.groups()
        if bare is not None and bare.casefold() == "or":
            join_or = bool(groups)
            continue
        if bare is not None and bare.startswith("-") and len(bare) > 1:
            negate, bare = "-", bare[1:]
        if bare is not None:
            bare = without_possessive(bare)  # "Northwind's terms" asks about Northwind
        term = _term(phrase if phrase is not None else str(bare))
        if term is None:
            continue  # a lone "-", a stop word: nothing to match or exclude
        if negate:
            excluded.append(term)
        elif join_or:
            groups[-1].append(term)
            join_or = False
        else:
            groups.append([term])
    return Terms(tuple(tuple(g) for g in groups), tuple(excluded))


def phrased(q: str, names: Iterable[str]) -> str:
    """``q`` with each of ``names`` as one phrase where ``q`` says its words in a row, as
    plain words: "Customer 88 delivery address" then matches a text that names Customer
    88, not one that says "customer" and, in another customer's address, "88"."""
    for name in names:
        wanted = WORDS.findall(fold(name))
        found = list(_TERM.finditer(q))
        for start in range(len(found) - len(wanted) + 1 if len(wanted) > 1 else 0):
            run = found[start : start + len(wanted)]
            if all(
                m.group(3) is not None
                and not m.group(3).startswith("-")
                and WORDS.findall(fold(without_possessive(m.group(3)))) == [word]
                for m, word in zip(run, wanted, strict=True)
            ):
                first, end = run[0].start(3), run[-1].end(3)
                last = run[-1].start(3) + len(without_possessive(run[-1].group(3)))
                q = f'{q[:first]}"{q[first:last]}"{q[end:]}'
                break
    return q


def positive_text(q: str) -> str:
    """``q`` folded, without what it excludes or a lone dash: the text a name is compared
    with ("Dana -Kim" is "dana", "- Dana" is "dana"), the same on both backends."""
    kept = []
    for match in _TERM.finditer(q):
        negate, phrase, bare = match.groups()
        if negate or (bare is not None and bare.startswith("-")):
            continue
        kept.append(phrase if phrase is not None else bare)
    return " ".join(fold(" ".join(kept)).split())


def holds(words: set[str], term: Term) -> bool:
    """Whether a text of ``words`` (folded, identifiers whole and by their parts) holds
    every word of ``term``, or the identifier it is."""
    return set(term.words) <= words or (term.joined is not None and term.joined in words)


def _prefixed(term: Term, prefix: bool) -> bool:
    return prefix and len(term.words) == 1 and len(term.words[0]) >= PREFIX_MIN


def tsquery(terms: Terms, *, prefix: bool = False) -> str:
    """The terms as ``to_tsquery`` text: each quoted, so the configuration parses it as it
    parsed the document (a phrase's words follow each other, its stop words keep their
    distance), joined by ``|`` within a group and ``&`` between groups. An identifier also
    matches whole; with ``prefix``, a long word matches as a prefix of its stem
    ("delivered" finds "deliveries")."""

    def one(term: Term) -> str:
        quoted = f"'{term.text}'" + (":*" if _prefixed(term, prefix) else "")
        return f"({quoted} | '{term.joined}')" if term.joined else quoted

    parts = ["(" + " | ".join(one(t) for t in group) + ")" for group in terms.groups]
    parts += ["!" + one(t) for t in terms.excluded]
    return " & ".join(parts)


def fts5(terms: Terms, *, prefix: bool = False) -> str:
    """The terms as an FTS5 MATCH expression, every term quoted (nothing a caller types
    is an FTS5 operator), as ``tsquery`` reads them. Empty when there is no positive term."""
    if not terms:
        return ""

    def one(term: Term) -> str:
        quoted = '"' + " ".join(term.words) + '"' + ("*" if _prefixed(term, prefix) else "")
        return f'({quoted} OR "{term.joined}")' if term.joined else quoted

    expression = " AND ".join("(" + " OR ".join(one(t) for t in g) + ")" for g in terms.groups)
    if terms.excluded:
        expression = f"({expression}) NOT ({' OR '.join(one(t) for t in terms.excluded)})"
    return expression


NEAR_RATIO = 0.75  # a word this like a name's word is that word misspelled


def named(word: str, names: set[str]) -> bool:
    """A word of the names, in its letters or in Latin ones, or one misspelled (as
    lexical search reads near spellings); a number only as it is."""
    latin = WORDS.findall(fold(romanized(word)))
    if latin:  # syllables (王芳: wang fang) are too short to be near: exact only
        return all(part in names for part in latin)
    if word in names:
        return True
    if any(c.isdigit() for c in word):
        return False
    return any(
        (len(word) > 2 and one_edit(word, name))
        or difflib.SequenceMatcher(None, word, name).ratio() >= NEAR_RATIO
        for name in names
    )


def one_edit(a: str, b: str) -> bool:
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


Key = TypeVar("Key")


def most_named(covered: Mapping[Key, frozenset[Any]]) -> set[Key]:
    """The keys whose set no other key's holds and more ("Dana Kim", not Dana Whitfield,
    when the query says both words): compared by distinct sets, few however many keys."""
    distinct = set(covered.values())
    most = {s for s in distinct if not any(s < other for other in distinct)}
    return {key for key, held in covered.items() if held in most}
