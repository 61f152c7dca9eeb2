"""The rules by which an erasure follows copies of her (issue 42, point 6), one story each,
on any database (the full-dump proof is ``test_erasure_follows_copies``): which held
mentions are hers, which options carry her, which replays and sources go with her."""

from __future__ import annotations

from typing import Any

from audit.models import AuditEvent
from core.models import IdempotencyRecord
from memory.models import Clarification, Erasure, MemoryItem, MemoryVersion, Source
from tests.approvals.support import Flow
from tests.erasure import story
from tests.erasure.story import build


def erase(flow: Flow, subject: str) -> Erasure:
    started = flow.ok(flow.post("erin", f"/entities/{subject}/erase", {"reason": "Art. 17"}), 202)
    erasure = Erasure.objects.get(pk=started["erasure"])
    assert erasure.status == "done", erasure.error
    return erasure


def held(flow: Flow, sources: list[str], **fields: Any) -> dict[str, Any]:
    body = flow.body("preference", {}, sources=sources, **fields)
    body.pop("basis")
    if "subject_mention" in fields:
        body.pop("subject")
    if "value_mention" in fields:
        body.pop("value")
    memory = flow.ok(flow.post("agent", "/memories", body), 201)
    assert memory["status"] == "held_unresolved", memory
    return dict(memory)


def source(flow: Flow, content: str, key: str = "") -> str:
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    body = {"kind": "message", "content": content}
    return str(flow.ok(flow.post("agent", "/sources", body, **headers), 201)["id"])


def options(memory_id: str, member: str) -> list[dict[str, Any]]:
    return list(Clarification.objects.get(version__item_id=memory_id, member=member).options)


def test_a_held_mention_of_her_name_is_erased_as_hers_and_her_source_is_not_kept_for_it(
    flow: Flow,
):
    # Given a proposal that names her only by mention, never linked, citing her message.
    tale = build(flow)
    naming = held(
        flow,
        [tale.sources[0]],
        subject_mention="  ottoline   QUILLFEATHER ",
        field="parcel_note",
        statement=f"{story.NAME} wants a call before delivery on {story.PHONE}.",
    )

    erasure = erase(flow, tale.subject)

    # Then it was hers: linked, retired with her facts, its mention, statement and question
    # gone; and her message, cited by nothing else, is purged, not kept "for" it.
    assert erasure.counts["mentions"] == 1
    started = AuditEvent.objects.get(action="subject.erasure_started", target_id=tale.subject)
    assert started.data["mentions"] == [naming["id"]]  # ids only, never the mention
    item = MemoryItem.objects.get(pk=naming["id"])
    assert (item.subject_id, item.subject_mention) == (tale.subject, "")
    version = MemoryVersion.objects.get(item=item)
    assert (version.status, version.statement, version.value) == ("retired", "", None)
    question = Clarification.objects.get(version=version)
    assert (question.mention, question.question, question.options) == ("", "", [])
    assert Source.objects.get(pk=tale.sources[0]).content is None
    assert erasure.kept == [{"source": tale.shared_source, "also_cited_for": [tale.other]}]


def test_a_mention_another_live_entity_answers_to_does_not_single_her_out(flow: Flow):
    # Given Otto, who also goes by her alias, a mention of that alias, and a mention that
    # holds her whole name among other words.
    tale = build(flow)
    otto = {"kind": "customer", "name": "Otto Vane", "aliases": [story.ALIAS]}
    otto_id = flow.ok(flow.post("agent", "/entities", otto), 201)["id"]
    shared = held(flow, [tale.shared_source], subject_mention=story.ALIAS, field="parcel_note")
    assert {o["id"] for o in shared["needs_clarification"]["options"]} == {tale.subject, otto_id}
    neighbour = held(
        flow,
        [tale.shared_source],
        subject_mention=f"{story.NAME}'s neighbour",
        field="parcel_note",
    )

    erasure = erase(flow, tale.subject)

    # Then the alias both answer to stays held, with Otto as its only candidate; the
    # mention of her whole name was hers.
    assert erasure.counts["mentions"] == 1
    assert MemoryItem.objects.get(pk=shared["id"]).subject_id is None
    assert flow.memory(shared["id"])["status"] == "held_unresolved"
    assert [o["id"] for o in options(shared["id"], "subject")] == [otto_id]
    assert MemoryItem.objects.get(pk=neighbour["id"]).subject_id == tale.subject


def test_an_option_copied_from_her_goes_and_another_subjects_own_equal_value_stays(
    flow: Flow,
):
    # Given the other subject delivers to the same address as hers, by its own fact, and
    # a held question about it offers that fact, her note copied as an option, and a depot.
    tale = build(flow)
    body = flow.body(
        "preference",
        {},
        subject=tale.other,
        field="delivery_address",
        value=story.ADDRESS,
        statement="Harbor's parcels go to the same lane.",
        sources=[tale.shared_source],
    )
    body.pop("basis")
    theirs = flow.ok(flow.post("agent", "/memories", body), 201)["id"]
    question = held(
        flow,
        [tale.shared_source],
        subject=tale.other,
        field="delivery_address",
        value_mention="the same as before",
        value_options=[
            {"label": "her note", "value": {"note": story.STATEMENT}},
            {"label": "the depot", "value": "Depot 4, Harbor Road"},
        ],
    )
    offered = question["needs_clarification"]["options"]
    assert [o["value"] for o in offered] == [
        story.ADDRESS,
        {"note": story.STATEMENT},
        "Depot 4, Harbor Road",
    ]

    erasure = erase(flow, tale.subject)

    # Then only the copy of her note goes; the question stays open with the rest.
    assert erasure.counts["clarification_options"] == 1
    left = options(question["id"], "value")
    assert [(o["id"], o["memory_id"]) for o in left] == [("opt_1", theirs), ("opt_3", None)]
    assert flow.memory(question["id"])["status"] == "held_unresolved"


def test_a_replay_quoting_her_name_goes_and_one_that_does_not_stays(flow: Flow):
    tale = build(flow)
    source(flow, f"Note: {story.NAME} called about her parcel", key="quote-1")
    source(flow, "Note: the Ottoline Quillfeathers fan club called", key="quote-2")
    source(flow, "Harbor called about the pallets", key="quote-3")

    erasure = erase(flow, tale.subject)

    # quill-1 (her replayed source) and quote-1 (her name) are gone; the rest stay.
    assert erasure.counts["idempotency_records"] == 2
    kept = IdempotencyRecord.objects.values_list("key", flat=True)
    assert sorted(kept) == ["quote-2", "quote-3"]


def test_the_evidence_of_her_alias_goes_with_the_alias(flow: Flow):
    # Given two aliases of hers, each with a signed letter as evidence; the second letter
    # is also the evidence of another entity's alias.
    tale = build(flow)
    letter = source(flow, f"Signed Ottie Q., {story.PHONE}", key="letter-1")
    both = source(flow, "Signed by both households", key="letter-2")
    flow.ok(
        flow.post(
            "agent", f"/entities/{tale.subject}/aliases", {"alias": "Ottie Q.", "source": letter}
        ),
        201,
    )
    flow.ok(
        flow.post(
            "agent", f"/entities/{tale.subject}/aliases", {"alias": "The Q.", "source": both}
        ),
        201,
    )
    flow.ok(
        flow.post("agent", f"/entities/{tale.other}/aliases", {"alias": "HL", "source": both}), 201
    )

    erasure = erase(flow, tale.subject)

    # Then the letter only she was evidenced by is purged, with its stored replay; the
    # shared one stays whole.
    assert Source.objects.get(pk=letter).content is None
    assert Source.objects.get(pk=both).content == "Signed by both households"
    assert not IdempotencyRecord.objects.filter(key="letter-1").exists()
    assert IdempotencyRecord.objects.filter(key="letter-2").exists()
    assert erasure.counts["sources_purged"] == 3  # her message and replayed source, the letter
