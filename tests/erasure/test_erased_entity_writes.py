"""An erased entity takes no new personal data (issue 42, point 5): every write that names
her — an alias, a link of a held mention, a clarify choice, a correction of her memory, a
proposal about her, a reference to her in a value — is a 410 ``erased`` naming the member,
over REST and MCP alike, and changes nothing; matching, lookup by external ref and search
never offer her again."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from memory.models import Alias, Entity, MemoryItem, MemoryVersion
from tests.approvals.support import Flow
from tests.erasure.story import build
from tests.mcp.support import InProcess, answer, problem

ERASED = "https://memgov.dev/problems/erased"


def erase(flow: Flow, subject: str) -> None:
    flow.ok(flow.post("erin", f"/entities/{subject}/erase", {"reason": "Art. 17"}), 202)


def gone(response: Any, member: str, entity: str) -> None:
    assert response.status_code == 410, response.content
    body = response.json()
    assert body["type"] == ERASED
    assert body["errors"] == {member: [f"entity {entity} was erased"]}


def held_mention(flow: Flow, mention: str) -> str:
    """A preference about someone only named, held until a subject is linked."""
    body = flow.body("preference", {}, subject_mention=mention, value="by courier")
    for member in ("subject", "basis"):
        body.pop(member)
    memory = flow.ok(flow.post("agent", "/memories", body), 201)
    assert memory["status"] == "held_unresolved", memory
    return str(memory["id"])


def test_erased_person_cannot_be_given_a_new_alias(flow: Flow):
    tale = build(flow)
    erase(flow, tale.subject)

    refused = flow.post("agent", f"/entities/{tale.subject}/aliases", {"alias": "Ottie Q"})
    by_tool = InProcess(flow.world.keys["agent"]).call(
        "add_alias", {"entity_id": tale.subject, "alias": "Ottie Q"}
    )

    gone(refused, "entity_id", tale.subject)
    assert problem(by_tool, 410)["errors"] == {"entity_id": [f"entity {tale.subject} was erased"]}
    assert not Alias.objects.filter(entity_id=tale.subject).exists()
    matched = flow.ok(flow.post("agent", "/entities/match", {"name": "Ottie Q"}))
    assert matched == {"decision": "none", "candidates": []}


def test_a_held_mention_cannot_be_linked_to_an_erased_person_nor_clarified_as_her(flow: Flow):
    tale = build(flow)
    held = held_mention(flow, "the lady at the green door")
    erase(flow, tale.subject)

    linked = flow.post("rita", f"/memories/{held}/link-subject", {"subject": tale.subject})
    chosen = flow.post("agent", f"/memories/{held}/clarify", {"choice": tale.subject})
    by_tool = InProcess(flow.world.keys["agent"]).call(
        "clarify", {"memory_id": held, "choice": tale.subject}
    )

    gone(linked, "subject", tale.subject)
    gone(chosen, "choice", tale.subject)
    assert problem(by_tool, 410)["errors"] == {"choice": [f"entity {tale.subject} was erased"]}
    assert MemoryItem.objects.get(pk=held).subject_id is None
    assert flow.memory(held)["status"] == "held_unresolved"


def test_her_memory_takes_no_correction_over_rest_or_mcp(flow: Flow):
    tale = build(flow)
    erase(flow, tale.subject)
    memory_id = tale.memories[0]
    change = {"value": "42 New Street", "statement": "She moved to New Street."}

    refused = flow.post("agent", f"/memories/{memory_id}/versions", change, HTTP_IF_MATCH='"1"')
    by_tool = InProcess(flow.world.keys["agent"]).call(
        "correct_memory", {"memory_id": memory_id, "if_match": 1, **change}
    )

    gone(refused, "subject", tale.subject)
    assert problem(by_tool, 410)["errors"] == {"subject": [f"entity {tale.subject} was erased"]}
    assert MemoryVersion.objects.filter(item_id=memory_id).count() == 1


def test_no_new_fact_may_be_about_her_or_point_at_her(flow: Flow):
    tale = build(flow)
    erase(flow, tale.subject)
    about_her = flow.body("preference", {}, subject=tale.subject, sources=[tale.shared_source])
    pointing = flow.body(
        "preference",
        {},
        subject=tale.other,
        field="contact",
        value={"person": {"entity": tale.subject}, "role": "buyer"},
        sources=[tale.shared_source],
    )
    for body in (about_her, pointing):
        body.pop("basis")
    mcp = InProcess(flow.world.keys["agent"])
    before = MemoryItem.objects.count()

    gone(flow.post("agent", "/memories", about_her), "subject", tale.subject)
    gone(flow.post("agent", "/memories", pointing), "value", tale.subject)
    assert problem(mcp.call("propose_memory", about_her), 410)["errors"] == {
        "subject": [f"entity {tale.subject} was erased"]
    }
    assert problem(mcp.call("propose_memory", pointing), 410)["errors"] == {
        "value": [f"entity {tale.subject} was erased"]
    }
    assert MemoryItem.objects.count() == before


def test_an_erased_entity_is_never_a_candidate_whatever_its_row_still_holds(flow: Flow):
    # Given an entity marked erased whose name, alias and external ref are still on its
    # rows (as between an erasure's lock and its tombstone), and a live one beside it.
    entity = {
        "kind": "customer",
        "name": "Wilhelmina Stroud",
        "aliases": ["Billie Stroud"],
        "external_ref": "crm-stroud-88",
    }
    erased = flow.ok(flow.post("agent", "/entities", entity), 201)["id"]
    live = flow.ok(flow.post("agent", "/entities", {"kind": "customer", "name": "Stroud Ltd"}), 201)
    Entity.objects.filter(pk=erased).update(erased_at=timezone.now())
    mcp = InProcess(flow.world.keys["agent"])

    # Then no way of finding an entity offers her.
    for name in ("Wilhelmina Stroud", "Billie Stroud", "Billie"):
        matched = flow.ok(flow.post("agent", "/entities/match", {"name": name}))
        assert matched == {"decision": "none", "candidates": []}, name
        assert answer(mcp.call("match_entity", {"name": name}))["decision"] == "none"
    by_ref = flow.ok(flow.get("agent", "/entities/by-ref?external_ref=crm-stroud-88"))
    assert by_ref == {"decision": "none", "candidates": []}
    assert (
        answer(mcp.call("match_external_ref", {"external_ref": "crm-stroud-88"}))["candidates"]
        == []
    )
    for q in ("Wilhelmina", "Billie Stroud", "crm-stroud-88", "Stroud"):
        found = flow.ok(flow.get("agent", f"/search?q={q}"))["results"]
        assert erased not in [r["id"] for r in found], q
        searched = answer(mcp.call("search", {"q": q}))["results"]
        assert erased not in [r["id"] for r in searched], q
    stroud = flow.ok(flow.get("agent", "/search?q=Stroud"))["results"]
    assert [r["id"] for r in stroud if r["type"] == "entity"] == [live["id"]]
