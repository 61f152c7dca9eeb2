"""The labelled search-quality set is consistent: every wanted key exists in the world it
describes, every reference names an entity of it, each category has questions."""

from __future__ import annotations

from bench import quality_set


def _keys() -> set[str]:
    world = quality_set.world()
    return {f"ent:{e.key}" for e in world.entities} | {f"mem:{f.key}" for f in world.facts}


def test_every_wanted_key_exists_and_no_answer_wants_none() -> None:
    keys = _keys()
    for labelled in quality_set.QUERIES:
        if labelled.category == quality_set.NO_ANSWER:
            assert labelled.wanted is None, labelled.q
        else:
            assert labelled.wanted in keys, labelled.q


def test_keys_are_unique_and_references_name_entities_of_the_set() -> None:
    world = quality_set.world()
    entities = [e.key for e in world.entities]
    facts = [f.key for f in world.facts]
    assert len(set(entities)) == len(entities)
    assert len(set(facts)) == len(facts)
    for fact in world.facts:
        assert fact.subject in set(entities), fact.key
        assert set(world.refs(fact.value)) <= set(entities), fact.key


def test_categories_are_those_of_issue_45_and_none_is_empty() -> None:
    counts: dict[str, int] = {}
    for labelled in quality_set.QUERIES:
        counts[labelled.category] = counts.get(labelled.category, 0) + 1
    assert set(counts) == {
        "first_name",
        "full_name",
        "misspelling",
        "no_accents",
        "external_ref",
        "ref_part",
        "phrase",
        "question",
        "mixed",
        "paraphrase",
        "transliteration",
        "multi_entity",
        "no_answer",
    }
    assert counts["paraphrase"] >= 20
    assert counts["no_answer"] >= 10


def test_issue_44s_queries_are_kept_first_and_unchanged() -> None:
    assert len(quality_set.ISSUE_44) == 64
    assert quality_set.QUERIES[:64] == quality_set.ISSUE_44
    assert quality_set.ISSUE_44[0] == quality_set.Labelled("first_name", "Jürgen", "ent:jurgen")
    assert quality_set.ISSUE_44[-1] == quality_set.Labelled(
        "mixed", "Globex currency", "mem:globex_currency"
    )
