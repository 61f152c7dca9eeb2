"""The field catalog's input shape and answers, shared by the REST views and the dashboard
form (docs/api.md, Field catalog)."""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers

from agent_interface.answers import validated
from agent_interface.serializers import StrictInput
from core.errors import InvalidContent
from core.kinds import MemoryKind
from core.principals import Principal
from memory import catalog
from memory.rules import DIMENSION_RE

# The names a proposal's ``field`` may take (agent_interface.serializers.ProposalInput).
FIELD_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]{0,99}$")


class AuthoritativeSystemInput(StrictInput):
    name = serializers.CharField(max_length=200)
    url = serializers.URLField(max_length=2000, required=False, allow_null=True)
    tool = serializers.CharField(max_length=200, required=False, allow_null=True)


class FieldInput(StrictInput):
    """PUT replaces the entry: an omitted member takes its default (none, any, every)."""

    description = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    value_schema = serializers.DictField(child=serializers.JSONField(), required=False)
    kinds = serializers.ListField(
        child=serializers.ChoiceField(choices=MemoryKind.choices), required=False
    )
    required_scope = serializers.ListField(
        child=serializers.RegexField(DIMENSION_RE.pattern, max_length=32), required=False
    )
    default_expiry_days = serializers.IntegerField(
        min_value=1, max_value=3650, required=False, allow_null=True
    )
    authoritative_system = AuthoritativeSystemInput(required=False, allow_null=True)


def _checked_name(name: str) -> str:
    if not FIELD_NAME_RE.match(name):
        raise InvalidContent({"name": ["must match ^[A-Za-z][A-Za-z0-9_.\\-]{0,99}$"]})
    return name


def field_listed(principal: Principal) -> dict[str, Any]:
    return {"results": [catalog.field_representation(d) for d in catalog.field_list(principal)]}


def field_read(principal: Principal, name: str) -> dict[str, Any]:
    return catalog.field_representation(catalog.field_get(principal, _checked_name(name)))


def field_defined(principal: Principal, name: str, data: Any) -> dict[str, Any]:
    valid = validated(FieldInput, data)
    definition = catalog.field_define(principal=principal, name=_checked_name(name), data=valid)
    return catalog.field_representation(definition)
