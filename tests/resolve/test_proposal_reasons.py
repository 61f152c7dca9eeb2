"""A proposal's reasons say what happens next and what the agent can do (issue 44, point
10): a held value question lists the options to answer with ``clarify``, a subject
mention says the agent may answer it too, a rejection is said once, and failed checks
are words naming the memory it ties with, as far as the reader may see it."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts import tenancy
from approvals.services import version_reject
from core.models import ApiKey
from core.principals import Principal
from memory.models import MemoryItem, MemoryVersion
from tests.conftest import World, later
from tests.mcp.support import InProcess, answer
from tests.resolve.conftest import Story
from tests.resolve.test_clarification import HOME, OFFICE, addresses, send_it_there

__all__ = ["addresses"]  # the fixture, shared with the clarification stories


def reasons(world: World, key: str, memory_id: str) -> list[str]:
    """The reasons ``GET /proposals`` gives, the same as the MCP tool's."""
    listed = world.client(key).get("/api/v1/proposals").json()["results"]
    over_mcp = answer(InProcess(world.keys[key]).call("list_my_proposals", {}))["results"]
    assert listed == over_mcp
    [found] = [p["reasons"] for p in listed if p["memory_id"] == memory_id]
    return list(found)


def test_a_held_value_question_says_to_answer_with_clarify_and_its_options(world, dana, addresses):
    held = world.client("agent").post("/api/v1/memories", send_it_there(world, dana), "json")
    memory_id = held.json()["id"]

    said = reasons(world, "agent", memory_id)

    assert said == [
        f"held: which delivery_address does “there” mean? Answer with clarify: "
        f"opt_1 “{HOME}”, opt_2 “{OFFICE}”"
    ]


def test_a_held_subject_says_the_agent_may_answer_and_the_value_waits(world, dana, addresses):
    body = send_it_there(world, "", subject_mention="Dana")
    del body["subject"]
    memory_id = world.client("agent").post("/api/v1/memories", body, "json").json()["id"]

    said = reasons(world, "agent", memory_id)

    assert said == [
        f"held: which entity does “Dana” mean? Answer with clarify: {dana} (Dana Kim "
        "(customer)) (or a reviewer links it)",
        "held: which delivery_address “there” means is asked once the subject is answered, "
        "with the values in use for it",
    ]


def test_a_rejection_is_said_once_with_what_to_do(world, dana):
    body = send_it_there(world, dana, value="9 Pier Road")
    memory_id = world.client("agent").post("/api/v1/memories", body, "json").json()["id"]
    item = MemoryItem.objects.get(pk=memory_id)
    version_reject(principal=world.principal("rita"), item=item, reason="order-b was cancelled")

    said = reasons(world, "agent", memory_id)

    assert said == [
        "rejected by rita: order-b was cancelled",
        "it will not be used: if the claim still holds, propose it again (propose_memory) "
        "with what the reviewer asked for",
    ]


def window(story: Story, dana: str, value: str, **extra: Any) -> Any:
    return story.propose(
        kind="preference",
        subject=dana,
        field="delivery_window",
        value=value,
        statement=f"Dana wants deliveries {value}.",
        scope={},
        expires_at=None,
        owner="nora",
        **extra,
    )


def test_a_tie_names_the_memory_to_correct_instead(world, story: Story, dana):
    mornings = story.activate(
        kind="preference",
        subject=dana,
        field="delivery_window",
        value="mornings",
        statement="Dana wants deliveries mornings.",
        scope={},
        expires_at=None,
        owner="nora",
    )

    evenings = window(story, dana, "evenings")

    assert evenings.status == "checks_failed"
    said = reasons(world, "agent", evenings.item_id)
    assert said == [
        f"its checks failed: {mornings.item_id} already holds “mornings” for this scope: "
        f"propose a correction of {mornings.item_id} (correct_memory) instead of a new memory",
        "it is not used as it is: correct it (correct_memory) and its checks run again, or a "
        "reviewer rejects it",
    ]
    assert not any("regression" in reason for reason in said)


def test_a_tie_with_a_memory_the_reader_may_not_see_names_neither_it_nor_its_value(
    world, story: Story, dana
):
    nights = story.activate(
        kind="preference",
        subject=dana,
        field="delivery_window",
        value="nights",
        statement="Dana wants deliveries at night.",
        scope={},
        expires_at=None,
        owner="nora",
    )
    evenings = window(story, dana, "evenings")
    assert evenings.status == "checks_failed"

    # Its source was relabelled since: the agent may no longer see the memory it ties with.
    MemoryVersion.objects.filter(pk=nights.pk).update(required_visibility=[["finance"]])

    said = reasons(world, "agent", evenings.item_id)
    assert said[0] == (
        "its checks failed: it ties with another memory you may not see, so agents would "
        "get no answer there: a reviewer decides which one holds"
    )
    assert "nights" not in str(said) and "mem_" not in str(said)


def test_options_are_said_as_far_as_the_key_may_see_them_now(world, story: Story, dana, addresses):
    key, secret = tenancy.api_key_create(
        tenant=world.tenant, agent_name="ledger", labels=["finance", "staff"]
    )
    world.keys["finance"] = secret
    finance = Principal(tenant=world.tenant, name="agent:ledger", labels=frozenset({"finance"}))
    story.activate(
        kind="task_fact",
        subject=dana,
        field="delivery_address",
        value="9 Vault Street",
        statement="Order order-f goes to Dana's bank.",
        scope={"task": "order-f"},
        expires_at=later(5),
        visibility=["finance"],
        by=finance,
    )
    held = world.client("finance").post("/api/v1/memories", send_it_there(world, dana), "json")
    memory_id = held.json()["id"]
    assert "9 Vault Street" in reasons(world, "finance", memory_id)[0]

    ApiKey.objects.filter(pk=key.pk).update(labels=["staff"])

    said = reasons(world, "finance", memory_id)
    assert "9 Vault Street" not in str(said)
    assert f"“{HOME}”" in said[0] and f"“{OFFICE}”" in said[0]


def test_the_list_reads_the_open_questions_of_a_page_at_once(world, dana, addresses):
    """One query more per held proposal (the memories its options come from), not two."""
    agent = world.client("agent")

    def queries_for_held() -> int:
        with CaptureQueriesContext(connection) as read:
            listed = agent.get("/api/v1/proposals?status=held_unresolved")
        assert listed.status_code == 200
        return len(read.captured_queries)

    agent.post("/api/v1/memories", send_it_there(world, dana), "json")
    one = queries_for_held()
    for _ in range(3):
        agent.post("/api/v1/memories", send_it_there(world, dana), "json")

    assert queries_for_held() - one == 3


def _finance_key(world: World) -> Principal:
    world.keys["finance"] = tenancy.api_key_create(
        tenant=world.tenant, agent_name="ledger", labels=["finance", "staff"]
    )[1]
    return Principal(tenant=world.tenant, name="agent:ledger", labels=frozenset({"finance"}))


def test_a_tie_with_a_hidden_memory_leaves_its_id_out_of_the_status_reason_and_checks(
    world, story: Story, dana
):
    """Issue 44 walk: GET /memories/{id} said "regression: mem_… v1 still resolves: …" and
    /checks listed the hidden memory's id to a key without its label."""
    finance = _finance_key(world)
    hidden = story.activate(
        kind="preference",
        subject=dana,
        field="delivery_window",
        value="nights",
        statement="Dana wants deliveries at night.",
        scope={},
        expires_at=None,
        owner="nora",
        visibility=["finance"],
        by=finance,
    )
    evenings = window(story, dana, "evenings")
    assert evenings.status == "checks_failed"
    assert hidden.item_id in evenings.status_reason  # the engine's record keeps it

    path = f"/api/v1/memories/{evenings.item_id}"
    told = world.client("agent").get(path).json()
    over_mcp = answer(
        InProcess(world.keys["agent"]).call("get_memory", {"memory_id": evenings.item_id})
    )
    checks = world.client("agent").get(f"{path}/checks").json()

    assert told["status_reason"] == (
        "its checks failed: it ties with another memory you may not see, so agents would "
        "get no answer there: a reviewer decides which one holds"
    )
    assert over_mcp["status_reason"] == told["status_reason"]
    assert hidden.item_id not in str(checks) and "nights" not in str(checks)
    [tie] = [c for c in checks if c["scenario"]["kind"] == "regression"]
    assert tie["scenario"]["name"] == "regression: another memory you may not see still resolves"
    assert tie["scenario"]["regression_of"] is None
    # A reader who may see it keeps what the engine recorded.
    seeing = world.client("finance")
    assert seeing.get(path).json()["status_reason"] == evenings.status_reason
    assert hidden.item_id in str(seeing.get(f"{path}/checks").json())


def test_a_duplicate_of_a_memory_in_use_names_it_and_says_to_correct_that_one(
    world, story: Story, dana
):
    """Same subject, field, scope and value as an active memory: the reason named the
    own-scope check and said to correct the duplicate itself (issue 44 walk)."""
    mornings = story.activate(
        kind="preference",
        subject=dana,
        field="delivery_window",
        value="mornings",
        statement="Dana wants deliveries mornings.",
        scope={},
        expires_at=None,
        owner="nora",
    )

    again = window(story, dana, "mornings")

    assert again.status == "checks_failed"
    said = reasons(world, "agent", again.item_id)
    assert said[0] == (
        f"its checks failed: {mornings.item_id} already holds “mornings” for this scope: "
        f"propose a correction of {mornings.item_id} (correct_memory) instead of a new memory"
    )
    assert not any("would not be told it" in reason for reason in said)
    # Behind a label the agent lacks, the memory is not named.
    MemoryVersion.objects.filter(pk=mornings.pk).update(required_visibility=[["finance"]])
    hidden = reasons(world, "agent", again.item_id)
    assert hidden[0] == (
        "its checks failed: another memory you may not see already holds this value for "
        "this scope, so this one would never be used: nothing to add; a reviewer rejects it"
    )
    assert mornings.item_id not in str(hidden)
