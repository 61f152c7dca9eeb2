"""``iter_memories`` and ``iter_audit`` walk every cursor page: 120 proposals come back once
each, in order, in three requests of 50."""

from __future__ import annotations

import pytest

from tests.client.conftest import Recording

COUNT = 120


@pytest.fixture
def orders(connect) -> list[str]:
    """120 task facts, one per order, proposed through the client. They name Dana by a
    mention (held until a reviewer links her), which spares each the preview checks and
    reviewer notifications that this test is not about."""
    agent = connect("agent")
    record = agent.record_source(kind="business_record", content="Orders 0-119: to the office.")
    return [
        agent.propose_memory(
            kind="task_fact",
            subject_mention="Dana Kim",
            field="delivery_address",
            value=f"{n} Dock Road",
            statement=f"Order order-{n} goes to Dana's office.",
            scope={"task": f"order-{n}"},
            owner="rita",
            expires_at="2099-01-01T00:00:00Z",
            sources=[record["id"]],
        )["id"]
        for n in range(COUNT)
    ]


def test_120_memories_and_their_events_come_back_once_each_page_by_page(connect, orders):
    """One test, because proposing the 120 items is the expensive part."""
    network = Recording()
    agent = connect("agent", transport=network)

    memories = agent.iter_memories(status="held_unresolved", page_size=50)
    first_page = [next(memories)["id"] for _ in range(50)]
    requests_after_first_page = len(network.sent)
    seen = first_page + [m["id"] for m in memories]
    events = list(connect("rita").iter_audit(action="memory.proposed", page_size=50))

    assert requests_after_first_page == 1
    assert seen == sorted(orders)
    assert len(set(seen)) == COUNT
    assert [s.path for s in network.sent] == ["/api/v1/memories"] * 3
    assert sorted(e["target_id"] for e in events) == sorted(orders)
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)


def test_entities_are_listed_page_by_page_and_found_by_part_of_a_name(connect):
    agent = connect("agent")
    made = [
        agent.create_entity(kind="customer", name=f"Harbour Customer {n}")["id"] for n in range(5)
    ]
    agent.create_entity(kind="supplier", name="Northwind Metals", aliases=["NW Harbour"])

    network = Recording()
    paged = connect("agent", transport=network)
    found = [e["id"] for e in paged.iter_entities(q="Harbour Cust", page_size=2)]

    assert found == sorted(made)
    assert [s.path for s in network.sent] == ["/api/v1/entities"] * 3
    by_alias = agent.list_entities(q="nw harb")
    assert [e["name"] for e in by_alias["results"]] == ["Northwind Metals"]
    assert by_alias["next"] is None
