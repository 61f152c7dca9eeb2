"""The resolve body's validation on its hot path (issue 46).

``agent_interface.serializers.ResolveInput`` is the contract for a resolve body and stays the only
author of its refusals. Running a DRF serializer costs about a tenth of a warm resolve's
CPU, though nearly every body is plainly valid: a subject, maybe fields and a context of
short texts. ``plainly_valid`` checks exactly that shape in plain Python and gives what
the serializer would give; for anything else — an unknown member, a wrong type, a null
where none is taken, a blank or long text, a refused character — it gives None and the
caller asks the serializer, so every 422 (status, members, messages) is still the
serializer's own and cannot drift. ``tests/unit/test_resolve_input_fast_path.py`` holds
the two to the same answers for generated bodies; a field changed in ``ResolveInput``
must change here too, and that test says so if it does not."""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any

from rest_framework import serializers

from agent_interface.serializers import ResolveInput
from core.inputs import text_problem

# ResolveInput's members; plainly_valid fills them in the serializer's order.
MEMBERS = frozenset({"subject", "fields", "context", "valid_at", "known_at", "task_id", "explain"})
MAX_SUBJECT = 40
MAX_FIELD = 100
MAX_FIELDS = 100
MAX_CONTEXT_VALUE = 200
MAX_TASK_ID = 200


def plainly_valid(data: Any) -> dict[str, Any] | None:
    """``data`` as ``ResolveInput`` validates it, when it is a plainly valid resolve body;
    None when the serializer must decide (it then refuses the body, or accepts one this
    function does not try to read)."""
    # Only a plain dict: a QueryDict (a dict too) is read differently by DRF's fields.
    if type(data) is not dict or not data.keys() <= MEMBERS:
        return None
    subject = _text(data.get("subject"), MAX_SUBJECT)
    if subject is None:
        return None
    valid: dict[str, Any] = {"subject": subject}
    if "fields" in data:
        fields = _texts(data["fields"], MAX_FIELD)
        if fields is None or not 1 <= len(fields) <= MAX_FIELDS:
            return None
        valid["fields"] = fields
    if "context" in data:
        context = _context(data["context"])
        if context is None:
            return None
        valid["context"] = context
    for name in ("valid_at", "known_at"):
        if name in data:
            when = _time(name, data[name])
            if when is None and data[name] is not None:  # null is taken: "now"
                return None
            valid[name] = when
    if "task_id" in data:
        task_id = data["task_id"]
        if task_id is not None:  # null is taken: no task
            task_id = _text(task_id, MAX_TASK_ID)
            if task_id is None:
                return None
        valid["task_id"] = task_id
    explain = data.get("explain", False)
    if type(explain) is not bool:
        return None
    valid["explain"] = explain
    return valid


def _text(value: Any, max_length: int) -> str | None:
    """The text as ResolveInput's ``CharField``s keep it (trimmed), or None for anything
    they would refuse: not a string, blank, too long once trimmed, a NUL or a lone
    surrogate. A number is refused too: ``StrictInput`` takes no number for a text."""
    if type(value) is not str or text_problem(value) is not None:
        return None
    text = value.strip()
    return text if text and len(text) <= max_length else None


def _texts(value: Any, max_length: int) -> list[str] | None:
    """A list of texts, each as ``_text`` keeps it; None if it is not one."""
    if type(value) is not list:
        return None
    texts: list[str] = []
    for item in value:
        text = _text(item, max_length)
        if text is None:
            return None
        texts.append(text)
    return texts


def _context(value: Any) -> dict[str, str] | None:
    """The context's dimensions with their values as ``_text`` keeps them; None if a value
    is not such a text (keys are the caller's: resolve reads the ones it knows)."""
    if type(value) is not dict:
        return None
    context: dict[str, str] = {}
    for key, item in value.items():
        text = _text(item, MAX_CONTEXT_VALUE)
        if text is None or type(key) is not str:
            return None
        context[key] = text
    return context


def _time(name: str, value: Any) -> datetime | None:
    """The time as ResolveInput's own field reads it (one reading of a time: its RFC 3339
    parsing, its zone rule, the current time zone), or None for null or a time it
    refuses."""
    if type(value) is not str:
        return None
    try:
        when: datetime = _bound_field(name).run_validation(value)
    except serializers.ValidationError:
        return None
    return when


@cache
def _bound_field(name: str) -> serializers.Field[Any, Any, Any, Any]:
    """ResolveInput's field ``name``: bound once and shared (``SharedFieldsSerializer``)."""
    shape: serializers.Serializer[Any] = ResolveInput()
    return shape.fields[name]
