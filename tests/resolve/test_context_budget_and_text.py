"""The context block keeps its budget and reads well (issue 44, points 7 to 9): ``used`` never
exceeds ``max_tokens``, counted exactly in the encoding the caller names; one oversized item
is cut alone while the rest still fill the block; the text names referenced entities and
sources, says a pending correction once (and "verify first" before an action), and says
when a subject has nothing that applies."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from memory import proposals
from memory.context import _fit, _Item, count_tokens
from memory.models import MemoryItem, MemoryVersion
from tests.conftest import later
from tests.mcp.support import InProcess, answer, problem
from tests.resolve.conftest import Story

ORDER_A = {"task": "order-a"}


def context(client: APIClient, status: int = 200, **body: Any) -> Any:
    response = client.post("/api/v1/context", body, format="json")
    assert response.status_code == status, response.content
    return response.json()


def preference(story: Story, subject: str, field: str, value: Any, **extra: Any) -> MemoryVersion:
    return story.activate(
        kind="preference",
        subject=subject,
        field=field,
        value=value,
        scope={},
        expires_at=None,
        owner="nora",
        **extra,
    )


@pytest.fixture
def notes(story: Story, dana: str) -> list[MemoryVersion]:
    return [
        preference(story, dana, f"note_{n}", f"note number {n} about how Dana likes things")
        for n in range(6)
    ]


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@pytest.mark.parametrize("budget", [100, 130, 180, 260, 400])
def test_used_never_exceeds_the_budget_even_the_smallest(world, dana, notes, budget, encoding):
    body = context(
        world.client("agent"),
        subjects=[dana, "Nobody Known"],
        context=ORDER_A,
        max_tokens=budget,
        encoding=encoding,
    )

    assert body["tokens"]["used"] == count_tokens(body["text"], encoding) <= budget
    assert body["tokens"]["encoding"] == encoding
    kept = {f["memory_id"] for f in body["facts"]}
    assert kept.isdisjoint({c["memory_id"] for c in body["cut"]})
    assert len(kept) + sum(c["section"] == "facts" for c in body["cut"]) == len(notes)
    if body["cut"]:
        assert body["text"].splitlines()[-1].startswith(f"[cut to fit {budget} tokens: ")


def test_the_smallest_budget_still_holds_a_fact_shortened_with_its_id(world, dana, notes):
    body = context(world.client("agent"), subjects=[dana], context=ORDER_A, max_tokens=100)

    assert body["tokens"]["used"] <= 100
    [first, *_] = body["facts"]
    assert len(body["facts"]) + len(body["cut"]) == len(notes)
    assert (
        f'- [fact] Dana Kim · note_0 = "note number 0 about how Dana …" '
        f"(shortened: get_memory {first['memory_id']})."
    ) in body["text"]


def test_a_context_of_many_dimensions_is_refused_and_a_long_one_is_only_counted(world, dana):
    agent = world.client("agent")
    wide = {f"dim_{n}": "x" * 20 for n in range(33)}

    refused = context(agent, 422, subjects=[dana], context=wide)
    assert "32 dimensions" in refused["errors"]["context"][0]
    long_value = context(agent, 422, subjects=[dana], context={"task": "x" * 101})
    assert list(long_value["errors"]) == ["context.task"]
    problem(
        InProcess(world.keys["agent"]).call("build_context", {"subjects": [dana], "context": wide}),
        422,
    )

    widest = dict(list(wide.items())[:32])
    body = context(agent, subjects=[dana], context=widest, max_tokens=100)
    assert body["tokens"]["used"] <= 100 and body["context"] == widest
    assert "32 dimensions" in body["text"].splitlines()[0]
    assert "dim_0=" not in body["text"]


def test_one_oversized_value_is_shortened_alone_and_the_other_subjects_still_fill_the_block(
    world, story, dana
):
    northwind, acme = (
        story.entity("Northwind Traders", "customer"),
        story.entity("Acme", "customer"),
    )
    huge = preference(story, dana, "notes", "long " * 1000)  # about 5 KB
    kept = [
        preference(story, northwind, "phone", "+1 555 0199"),
        preference(story, acme, "phone", "+1 555 0142"),
    ]

    body = context(world.client("agent"), subjects=[dana, northwind, acme], max_tokens=1000)

    assert body["tokens"]["used"] <= 1000
    assert [f["memory_id"] for f in body["facts"]] == [huge.item_id, *(v.item_id for v in kept)]
    assert body["cut"] == []
    assert (
        f'notes = "long long long long long long…" (shortened: get_memory {huge.item_id})'
        in (body["text"])
    )
    assert "+1 555 0199" in body["text"] and "+1 555 0142" in body["text"]


def test_an_item_that_does_not_fit_is_cut_alone_and_smaller_ones_still_fill():
    big = _Item("pending", (3,), {"memory_id": "mem_big"}, "- [pending] " + "word " * 300)
    small = [_Item("plans", (4, n), {"memory_id": f"mem_{n}"}, f"- [plan] x{n}") for n in range(3)]

    kept, cut, text = _fit([big, *small], 100, "Memgov context (answer).", "cl100k_base")

    assert kept == small and cut == [big]
    assert text.splitlines()[-1] == "[cut to fit 100 tokens: 1 pending left out; see cut]"
    assert count_tokens(text) <= 100


def test_a_bad_encoding_is_refused_naming_it(world, dana):
    refused = context(world.client("agent"), 422, subjects=[dana], encoding="gpt2")
    assert "encoding" in refused["errors"]


def test_cjk_text_is_counted_exactly_and_kept_within_its_budget(world, story, dana):
    for n in range(6):
        preference(story, dana, f"note_{n}", f"李伟的订单 ORD-100{n} 送到北京市朝阳区建国路{n}号")

    for encoding in ("cl100k_base", "o200k_base"):
        body = context(world.client("agent"), subjects=[dana], max_tokens=280, encoding=encoding)
        assert body["tokens"]["used"] == count_tokens(body["text"], encoding) <= 280


def test_a_reference_reads_as_the_entitys_name_with_its_id(world, story, dana):
    northwind = story.entity("Northwind Traders", "customer")
    preference(story, dana, "employer", {"entity": northwind})
    preference(story, dana, "accounts", [{"entity": northwind}, "private"])

    text = context(world.client("agent"), subjects=[dana])["text"]

    assert f"Dana Kim · employer = Northwind Traders ({northwind}) (" in text
    assert f'Dana Kim · accounts = ["Northwind Traders ({northwind})","private"]' in text
    assert '{"entity"' not in text


def test_evidence_names_the_sources_external_reference(world, story, dana):
    record = story.source(
        "Order ORD-1001: deliver to 4 Dock Road.", "business_record", external_ref="ORD-1001"
    )
    story.activate(
        kind="task_fact",
        subject=dana,
        field="delivery_address",
        value="4 Dock Road",
        scope=ORDER_A,
        expires_at=later(3),
        sources=[record],
    )

    text = context(world.client("agent"), subjects=[dana], context=ORDER_A)["text"]

    assert f"evidence {record} (ORD-1001)" in text


def test_a_pending_correction_is_said_once_and_means_verify_first_before_an_action(
    world, story, dana
):
    record = story.source("Order order-a: deliver to 4 Dock Road.", "business_record")
    office = story.activate(
        kind="task_fact",
        subject=dana,
        field="delivery_address",
        value="4 Dock Road",
        scope=ORDER_A,
        expires_at=later(3),
        sources=[record],
    )
    with story.on_commit(execute=True):
        proposals.memory_correct(
            principal=world.principal("agent"),
            item=MemoryItem.objects.get(pk=office.item_id),
            if_match='"1"',
            data={"value": "5 Dock Road", "statement": "Order order-a goes to the new office."},
        )
    agent = world.client("agent")

    answering = context(agent, subjects=[dana], context=ORDER_A, purpose="answer")
    acting = context(agent, subjects=[dana], context=ORDER_A, purpose="action")

    line = next(ln for ln in answering["text"].splitlines() if "· delivery_address" in ln)
    assert line.startswith('- [fact] Dana Kim · delivery_address = "4 Dock Road"')
    assert line.count("correction") == 1 and "pending_correction" not in line
    assert "valid_from_unknown" not in answering["text"]
    assert answering["facts"][0]["qualifiers"] == ["valid_from_unknown", "pending_correction"]
    acted = next(ln for ln in acting["text"].splitlines() if "· delivery_address" in ln)
    assert acted.startswith('- [verify first] Dana Kim · delivery_address = "4 Dock Road"')
    assert "- [fact]" not in acting["text"]


def test_a_subject_with_nothing_applicable_says_so(world, story, dana, notes):
    northwind = story.entity("Northwind Traders", "customer")

    body = context(world.client("agent"), subjects=[dana, northwind], context=ORDER_A)

    assert "- [none] Northwind Traders: nothing applies in this context." in body["text"]
    assert body["subjects"][1]["id"] == northwind


def test_the_block_is_the_same_over_mcp(world, dana, notes):
    args: dict[str, Any] = {"subjects": [dana], "max_tokens": 100, "encoding": "o200k_base"}
    over_mcp = InProcess(world.keys["agent"]).call("build_context", args)
    rest = context(world.client("agent"), **args)

    assert answer(over_mcp)["text"] == rest["text"]
    assert answer(over_mcp)["tokens"] == rest["tokens"]


def test_one_fact_cut_is_counted_as_one_fact():
    big = _Item("facts", (2,), {"memory_id": "mem_big"}, "- [fact] " + "word " * 300)
    small = [_Item("plans", (4, n), {"memory_id": f"mem_{n}"}, f"- [plan] x{n}") for n in range(3)]

    _, cut, text = _fit([big, *small], 100, "Memgov context (answer).", "cl100k_base")

    assert cut == [big]
    assert text.splitlines()[-1] == "[cut to fit 100 tokens: 1 fact left out; see cut]"


def test_a_fact_for_another_task_only_is_nothing_here_on_both_backends(world, story, dana):
    """Issue 44 walk: with the same data SQLite asked "What is Jürgen Müller's
    delivery_address here?" where PostgreSQL said nothing applies; SQLite read his fact for
    another task as a field asked about. A field no one named and nothing in this context
    holds is not a question (docs/api.md: a field named in ``fields`` is)."""
    jurgen = story.entity("Jürgen Müller", "customer")
    story.activate(
        kind="task_fact",
        subject=jurgen,
        field="delivery_address",
        value="Hauptstraße 5, Berlin",
        statement="Jürgen's parcels go to Hauptstraße 5.",
        scope={"task": "t-jur"},
        expires_at=later(5),
    )
    agent = world.client("agent")

    body = context(agent, subjects=[dana, jurgen], context={"task": "ORD-1001"})
    resolved = agent.post(
        "/api/v1/resolve", {"subject": jurgen, "context": {"task": "ORD-1001"}}, format="json"
    ).json()
    named = agent.post(
        "/api/v1/resolve",
        {"subject": jurgen, "context": {"task": "ORD-1001"}, "fields": ["delivery_address"]},
        format="json",
    ).json()

    assert "- [none] Jürgen Müller: nothing applies in this context." in body["text"]
    assert body["ask"] == []
    assert (resolved["facts"], resolved["abstentions"]) == ([], [])
    assert [a["reason"] for a in named["abstentions"]] == ["no_applicable_fact"]
