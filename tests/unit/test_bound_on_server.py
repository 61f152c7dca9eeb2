"""Bulk writes bind on the server (issue 14: a revalidation chunk's CPU): a client-binding
cursor writes each column array out value by value and escapes every quote of every JSON
value with a regular expression. Whatever a value holds, it must come back as written."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.db.backends.postgresql.base import ServerBindingCursor

from audit.models import AuditEvent
from audit.selectors import audit_verify
from audit.services import AuditEntry, audit_append_many
from core.sql import bound_on_server
from tests.conftest import World, needs

pytestmark = needs("postgres")

# Everything the text format of an array must quote or escape, and what it must not mangle.
AWKWARD = [
    'a "quoted" word',
    "back\\slash and \\\\ two",
    "{braces}, commas, and; semicolons",
    "NULL",
    "",
    "   padded   ",
    "ünïcødé, 中文, emoji 🧾",
    "line\nbreak\ttab",
]


def _data(text: str) -> dict[str, Any]:
    return {"text": text, "nested": {"list": [text, None, 1, 2.5, True]}, "none": None}


def test_django_cursors_bind_on_the_server_inside_the_block_only(db: Any) -> None:
    with connection.cursor() as before:
        assert not isinstance(before.cursor, ServerBindingCursor)
    with bound_on_server(), connection.cursor() as inside:
        assert isinstance(inside.cursor, ServerBindingCursor)
        inside.execute("SELECT %s::text[]", [AWKWARD])
        assert inside.fetchone()[0] == AWKWARD
    with connection.cursor() as after:
        assert not isinstance(after.cursor, ServerBindingCursor)


def test_a_failure_inside_the_block_leaves_client_binding_behind(db: Any) -> None:
    with pytest.raises(RuntimeError), bound_on_server():
        raise RuntimeError("the write failed")
    with connection.cursor() as after:
        assert not isinstance(after.cursor, ServerBindingCursor)


def test_audit_events_written_in_bulk_read_back_exactly_and_chain(world: World) -> None:
    entries = [
        AuditEntry(
            actor=f"user:{text[:8]}",
            action="bench.awkward",
            target_type="memory",
            target_id=f"mem_{i}",
            data=_data(text),
        )
        for i, text in enumerate(AWKWARD)
    ]
    with transaction.atomic():
        audit_append_many(tenant=world.tenant, events=entries)

    stored = AuditEvent.objects.filter(tenant=world.tenant, action="bench.awkward").order_by("seq")
    assert [(e.actor, e.target_id, e.data) for e in stored] == [
        (entry.actor, entry.target_id, entry.data) for entry in entries
    ]
    assert audit_verify(tenant=world.tenant).ok
