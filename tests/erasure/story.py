"""A customer who asked to be forgotten (issue 12): Ottoline Quillfeather, her delivery
address and her phone number, told to an agent in a message; a second subject shares one
harmless source with her. Every distinctive string is listed in ``NEEDLES``: after the
erasure none of them may be found anywhere, in any column of any table, nor in Redis.

``tell_in_free_text`` (issue 33, point 11) adds what people write about her in passing,
each with her name and phone: a retirement reason (on the item, the tasks it flags, the
outbox and the webhook deliveries), a rejection reason and an approval comment, a custom
scenario's context, and a source's ``external_ref``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from accounts.grants import permission_grant
from tests.approvals.support import Flow, person

NAME = "Ottoline Quillfeather"
ALIAS = "Ottie Quillfeather-Vane"
EXTERNAL_REF = "crm-quillfeather-4471"
ADDRESS = "17 Bramblewick Lane, Dunmore"
STATEMENT = "Ottoline wants deliveries left at the green door of Bramblewick"
MESSAGE = "Ottoline: please ship to 17 Bramblewick Lane, my phone is 07700 900417"
SPEAKER = "Ottoline Q. (customer)"
PHONE_META = "07700-900417-meta"
REPLAYED = "Ottoline repeated her Zanzibarine birthday, 3 March"
SHARED = "Weekly logistics call notes, 30 November"
PHONE = "07700 900417"
RETIREMENT = f"{NAME} phoned from {PHONE}: the reception note is out of date"
REJECTION = f"{NAME} ({PHONE}) never asked for a morning window"
APPROVAL = f"confirmed on the phone with {NAME}, {PHONE}"
CALLER = f"{NAME} {PHONE}"
SOURCE_REF = f"crm/{NAME}/{PHONE}"
TASK = "order-q-7"
OTHER = "Harbor Logistics"
P9 = {"project": "P-9"}

NEEDLES = (
    *(NAME, ALIAS, EXTERNAL_REF, ADDRESS, STATEMENT, MESSAGE, SPEAKER, PHONE_META, REPLAYED),
    PHONE,
)
# The casefolded name (``name_normalized``) and the address alone, as a resolve would show.
NEEDLES_FOLDED = tuple(n.casefold() for n in NEEDLES)


@dataclass
class Story:
    flow: Flow
    subject: str = ""
    other: str = ""
    memories: list[str] = field(default_factory=list)
    other_memory: str = ""
    sources: list[str] = field(default_factory=list)
    shared_source: str = ""


def eraser(flow: Flow, name: str = "erin") -> None:
    """A privacy officer: ``erase_subject`` and nothing else."""
    person(flow.world, name, "erase_subject")


def preference(flow: Flow, subject: str, source: str, **overrides: Any) -> str:
    fields: dict[str, Any] = {
        "subject": subject,
        "field": "delivery_note",
        "value": "leave at reception",
        "statement": "Deliveries go to reception.",
        "sources": [source],
        **overrides,
    }
    body = flow.body("preference", {}, **fields)
    body.pop("basis", None)
    memory = flow.ok(flow.post("agent", "/memories", body), 201)
    return str(memory["id"])


def build(flow: Flow, settle: Callable[[str], None] | None = None) -> Story:
    """The subject with two active preferences, a retrieval, a cached answer, a stored
    idempotent replay, and a source shared with another subject."""
    story = Story(flow)
    entity = {"kind": "customer", "name": NAME, "aliases": [ALIAS], "external_ref": EXTERNAL_REF}
    story.subject = flow.ok(flow.post("agent", "/entities", entity), 201)["id"]
    story.other = flow.ok(
        flow.post("agent", "/entities", {"kind": "supplier", "name": OTHER}), 201
    )["id"]
    message = {
        "kind": "message",
        "content": MESSAGE,
        "speaker": SPEAKER,
        "metadata": {"phone": PHONE_META},
    }
    story.sources.append(flow.ok(flow.post("agent", "/sources", message), 201)["id"])
    replayed = {"kind": "message", "content": REPLAYED}
    first = flow.post("agent", "/sources", replayed, HTTP_IDEMPOTENCY_KEY="quill-1")
    story.sources.append(flow.ok(first, 201)["id"])
    story.shared_source = flow.ok(
        flow.post("agent", "/sources", {"kind": "message", "content": SHARED}), 201
    )["id"]
    story.memories.append(
        preference(flow, story.subject, story.sources[0], value=ADDRESS, field="delivery_address")
    )
    story.memories.append(
        preference(
            flow,
            story.subject,
            story.sources[1],
            value={"note": STATEMENT},
            statement=STATEMENT,
        )
    )
    story.memories.append(preference(flow, story.subject, story.shared_source, field="call_day"))
    story.other_memory = preference(flow, story.other, story.shared_source, field="call_day")
    for memory_id in [*story.memories, story.other_memory]:
        if settle is not None:  # a real worker runs the gate checks
            settle(memory_id)
        assert flow.memory(memory_id)["status"] == "active", memory_id
    flow.ok(flow.post("agent", "/resolve", {"subject": story.subject, "context": P9}))
    flow.ok(
        flow.post(
            "agent", "/resolve", {"subject": story.subject, "context": P9, "task_id": "task-q-1"}
        )
    )
    return story


def task_fact(flow: Flow, story: Story, source: str, **overrides: Any) -> str:
    """A task fact about her, waiting for review."""
    fields: dict[str, Any] = {
        "subject": story.subject,
        "field": "delivery_window",
        "value": "mornings",
        "statement": "Deliver order Q-7 in the morning.",
        "sources": [source],
        "owner": "rita",
        **overrides,
    }
    body = flow.body("task_fact", {"task": TASK}, **fields)
    body.pop("basis", None)
    memory = flow.ok(flow.post("agent", "/memories", body), 201)
    assert memory["status"] == "pending_review", memory
    return str(memory["id"])


def tell_in_free_text(flow: Flow, story: Story) -> None:
    """Her name and phone where people write freely: a task fact cites a record whose
    ``external_ref`` names her and gets a custom scenario with her in its context and an
    approval comment; a second is rejected with a reason naming her; the reception
    preference, used by task-q-1, is retired with a reason naming her (the task is
    flagged, a ``memory.retired`` and a ``task.needs_reverification`` event are sent)."""
    record = {"kind": "business_record", "content": "Order Q-7", "external_ref": SOURCE_REF}
    source = flow.ok(flow.post("agent", "/sources", record), 201)["id"]
    story.sources.append(source)
    approved = task_fact(flow, story, source)
    scenario = {
        "kind": "applicable",
        "context": {"task": TASK, "caller": CALLER},
        "expect": "applies",
    }
    flow.ok(flow.post("agent", f"/memories/{approved}/scenarios", scenario), 201)
    flow.ok(flow.post("rita", f"/memories/{approved}/approve", {"comment": APPROVAL}))
    rejected = task_fact(flow, story, source, field="delivery_slot", value="8-10")
    flow.ok(flow.post("rita", f"/memories/{rejected}/reject", {"reason": REJECTION}))
    reception = story.memories[2]
    flow.ok(flow.retire(reception, reason=RETIREMENT))
    story.memories += [approved, rejected]


def grant_everywhere(flow: Flow, name: str, codename: str) -> None:
    permission_grant(tenant=flow.world.tenant, user=flow.world.users[name], codename=codename)


def scan_database(needles: tuple[str, ...]) -> tuple[int, list[str]]:
    """Every text, varchar, char and JSON column of every table of the database, found in
    the catalogue (``information_schema`` on PostgreSQL, ``pragma`` on SQLite); returns
    the number of tables scanned and where a needle was found."""
    found: list[str] = []
    tables = _text_columns()
    with connection.cursor() as cursor:
        for table, columns in sorted(tables.items()):
            for column in columns:
                quoted_t, quoted_c = (
                    connection.ops.quote_name(table),
                    connection.ops.quote_name(column),
                )
                cast = f"CAST({quoted_c} AS TEXT)"
                test = " OR ".join(f"LOWER({cast}) LIKE %s" for _ in needles)
                cursor.execute(
                    f"SELECT COUNT(*) FROM {quoted_t} WHERE {test}",  # noqa: S608 - catalogue names
                    [f"%{n.casefold()}%" for n in needles],
                )
                if cursor.fetchone()[0]:
                    found.append(f"{table}.{column}")
    return len(tables), found


def _text_columns() -> dict[str, list[str]]:
    tables: dict[str, list[str]] = {}
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT c.table_name, c.column_name FROM information_schema.columns c "
                "JOIN information_schema.tables t ON t.table_schema = c.table_schema "
                "AND t.table_name = c.table_name "
                "WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' "
                "AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb')"
            )
            for table, column in cursor.fetchall():
                tables.setdefault(table, []).append(column)
            cursor.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
            )
            every = [row[0] for row in cursor.fetchall()]
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            every = [row[0] for row in cursor.fetchall()]
            for table in every:
                cursor.execute(f"PRAGMA table_info({connection.ops.quote_name(table)})")
                for row in cursor.fetchall():
                    kind = str(row[2]).lower()
                    if any(t in kind for t in ("char", "text", "json", "clob")):
                        tables.setdefault(table, []).append(row[1])
    for table in every:
        tables.setdefault(table, [])
    return tables


def scan_redis(client: Any, needles: tuple[str, ...]) -> list[str]:
    """Every string key of the Redis database and its value."""
    found = []
    for key in client.scan_iter(count=1000):
        values = [key]
        if client.type(key) == b"string":
            values.append(client.get(key) or b"")
        text = b" ".join(values).decode("utf-8", "replace").casefold()
        if any(n.casefold() in text for n in needles):
            found.append(key.decode())
    return found
