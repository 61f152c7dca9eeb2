"""The context block's and the clarification's input shapes and answers, shared by the
REST views (``api.context``) and the MCP tools (``agent_mcp.context_tools``)."""

from __future__ import annotations

from typing import Any

from django.core import validators
from rest_framework import serializers

from agent_interface.answers import MemoryAnswer, memory_head_answer, validated
from agent_interface.serializers import StrictInput
from approvals.services import memory_clarify
from core.principals import Principal
from memory import context, selectors
from memory.context import DEFAULT_ENCODING, ENCODINGS

PURPOSES = ("answer", "action")
DEFAULT_MAX_TOKENS = 1000
# The task's scope, bounded so that it cannot outweigh the block it scopes (issue 44): as
# many dimensions as a scope may name and values the length of an id or a short name.
MAX_CONTEXT_DIMENSIONS = 32
MAX_CONTEXT_KEY = 32
MAX_CONTEXT_VALUE = 100


class ContextInput(StrictInput):
    subjects = serializers.ListField(
        child=serializers.CharField(max_length=200), min_length=1, max_length=20
    )
    context = serializers.DictField(  # type: ignore[assignment]  # declared fields leave the class
        child=serializers.CharField(max_length=MAX_CONTEXT_VALUE),
        required=False,
        # maxProperties in the schema; the same words as validate_context's.
        validators=[
            validators.MaxLengthValidator(
                MAX_CONTEXT_DIMENSIONS,
                f"at most {MAX_CONTEXT_DIMENSIONS} dimensions (got %(show_value)d)",
            )
        ],
    )
    purpose = serializers.ChoiceField(choices=PURPOSES, required=False, default="answer")
    max_tokens = serializers.IntegerField(
        min_value=100, max_value=32000, required=False, default=DEFAULT_MAX_TOKENS
    )
    fields = serializers.ListField(  # type: ignore[assignment]  # declared fields leave the class
        child=serializers.CharField(max_length=100),
        required=False,
        allow_empty=False,
        min_length=1,  # allow_empty says it first; min_length states it in the schema
        max_length=100,
    )
    task_id = serializers.CharField(max_length=200, required=False, allow_null=True)
    encoding = serializers.ChoiceField(choices=ENCODINGS, required=False, default=DEFAULT_ENCODING)

    def validate_context(self, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_CONTEXT_DIMENSIONS:
            raise serializers.ValidationError(
                f"at most {MAX_CONTEXT_DIMENSIONS} dimensions (got {len(value)})"
            )
        long = [k for k in value if len(k) > MAX_CONTEXT_KEY]
        if long:
            raise serializers.ValidationError(
                f"a dimension's name is at most {MAX_CONTEXT_KEY} characters: {long[0][:40]!r}…"
            )
        return value


class ClarifyInput(StrictInput):
    choice = serializers.CharField(
        max_length=40, help_text="An option's id: an entity id (subject) or opt_<n> (value)."
    )
    member = serializers.ChoiceField(
        choices=("subject", "value"),
        required=False,
        help_text="Which question it answers; default the first open one.",
    )


def context_built(principal: Principal, data: Any) -> dict[str, Any]:
    valid = validated(ContextInput, data)
    fields = valid.get("fields")
    return context.build_context(
        principal,
        context.ContextRequest(
            subjects=tuple(valid["subjects"]),
            context=valid.get("context") or {},
            purpose=valid["purpose"],
            max_tokens=valid["max_tokens"],
            fields=tuple(dict.fromkeys(fields)) if fields else None,
            task_id=valid.get("task_id") or None,
            encoding=valid["encoding"],
        ),
    )


def memory_clarified(principal: Principal, memory_id: str, data: Any) -> MemoryAnswer:
    item = selectors.access_memory(principal, memory_id)
    valid = validated(ClarifyInput, data)
    memory_clarify(
        principal=principal, item=item, choice=valid["choice"], member=valid.get("member")
    )
    return memory_head_answer(principal, memory_id)
