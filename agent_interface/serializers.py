"""Input shapes (types only; rules live in ``memory.rules``).

Every input shape is a ``StrictInput``: the one place that refuses a member the shape does
not declare (``contxt`` for ``context``) and a member of the wrong JSON type (``"task": 5``
where text is declared), which DRF's fields would otherwise ignore or convert. The REST
views and the MCP tools validate through these same shapes (``agent_interface.answers``)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import cached_property
from typing import Any, ClassVar

from django.core import validators
from rest_framework import serializers
from rest_framework.settings import api_settings
from rest_framework.utils.serializer_helpers import BindingDict

from core.kinds import MemoryKind
from memory.models import Assertion, Scenario, Source
from memory.rules import MAX_SCOPE_VALUE

MAX_CONTENT_CHARS = 32 * 1024
MAX_LABELS = 32  # labels on one key, source or memory: more is a mistake, not a policy
_CALLER_MAY_NOT_SET = ("verification", "status", "activated_at", "deactivated_at", "recorded_at")

# The JSON type each kind of field takes (the first match wins: a RegexField is a
# CharField). JSONField takes any; nested serializers check their own members.
_JSON_TYPES: tuple[tuple[type, tuple[type, ...], str], ...] = (
    (serializers.BooleanField, (bool,), "true or false"),
    (serializers.IntegerField, (int,), "an integer"),
    (serializers.FloatField, (int, float), "a number"),
    (serializers.CharField, (str,), "a string"),
    (serializers.ChoiceField, (str,), "a string"),
    (serializers.DateTimeField, (str,), "a string (an RFC 3339 time)"),
    (serializers.ListField, (list,), "a list"),
    (serializers.DictField, (dict,), "an object"),
)


_JSON_NAMES: dict[type, str] = {
    bool: "true or false",
    int: "a number",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "an object",
}


def _takes(types: tuple[type, ...], value: Any) -> bool:
    """``isinstance``, except that true and false are not numbers in JSON."""
    return isinstance(value, types) and (bool in types or not isinstance(value, bool))


def _wrong_type(field: serializers.Field[Any, Any, Any, Any], value: Any) -> Any:
    """The error detail when ``value`` is not the JSON type ``field`` takes, else None.
    A null is left to the field (``allow_null`` decides), as is a field of another kind."""
    expected = next((t for t in _JSON_TYPES if isinstance(field, t[0])), None)
    if value is None or expected is None:
        return None
    _, types, name = expected
    if not _takes(types, value):
        return [f"must be {name}, not {_JSON_NAMES.get(type(value), 'another type')}"]
    members: Iterable[tuple[Any, Any]] = ()
    if isinstance(field, serializers.ListField):
        members = enumerate(value)
    elif isinstance(field, serializers.DictField):
        members = value.items()
    child: serializers.Field[Any, Any, Any, Any] = getattr(field, "child", field)
    nested = {key: error for key, item in members if (error := _wrong_type(child, item))}
    return nested or None


# Text that is not blank: DRF trims a CharField and refuses what is left empty, so the
# OpenAPI description says so with a pattern (issue 44: a client generated from the schema
# sends what the API takes). Never refuses anything itself: a blank text fails first.
NOT_BLANK = validators.RegexValidator(r"\S", "may not be blank")
# A query parameter's text: no control character either (core.inputs refuses them first).
QUERY_TEXT = validators.RegexValidator(
    r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$",
    "may not be blank or hold a control character",
)


def _state_text_rule(field: serializers.Field[Any, Any, Any, Any], rule: Any) -> None:
    """Give ``field`` (or the items or values it holds) the rule a non-blank text keeps."""
    child = getattr(field, "child", None)
    if isinstance(field, serializers.ListField | serializers.DictField) and child is not None:
        _state_text_rule(child, rule)
    elif isinstance(field, serializers.CharField) and not field.allow_blank:
        field.validators.append(rule)


class StrictInput(serializers.Serializer[Any]):
    """An input shape that names every member it does not declare and every member of the
    wrong JSON type (422), beside DRF's own errors. ``refused_members`` are members a
    caller may know of but not set, each with its reason."""

    refused_members: ClassVar[Mapping[str, str]] = {}
    # What its non-blank texts match, stated in the OpenAPI description as a ``pattern``.
    text_rule: ClassVar[validators.RegexValidator] = NOT_BLANK

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        for field in fields.values():
            _state_text_rule(field, self.text_rule)
        return fields

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return super().to_internal_value(data)
        errors = self._boundary_errors(data)
        try:
            valid = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            detail = exc.detail
            if not isinstance(detail, Mapping):
                detail = {api_settings.NON_FIELD_ERRORS_KEY: detail}
            raise serializers.ValidationError({**detail, **errors}) from exc
        if errors:
            raise serializers.ValidationError(errors)
        return valid

    def _boundary_errors(self, data: Mapping[str, Any]) -> dict[str, Any]:
        fields = self.fields
        errors: dict[str, Any] = {}
        for name, value in data.items():
            field = fields.get(name)
            if field is None:
                why = self.refused_members.get(name)
                errors[name] = [why or unknown_name(name, fields, "a member of this request")]
            elif (error := _wrong_type(field, value)) is not None:
                errors[name] = error
        return errors


def unknown_name(name: str, known: Iterable[str], what: str) -> str:
    """Why ``name`` is refused, with the likely intended name: agents mistype by a letter."""
    names = sorted(known)
    guess = difflib.get_close_matches(str(name), names, n=1)
    if guess:
        return f"is not {what}; did you mean '{guess[0]}'?"
    return f"is not {what}, which takes: {', '.join(names) or 'none'}"


class ZonedDateTimeField(serializers.DateTimeField):
    """RFC 3339 with a zone: a naive time is ambiguous, so it is refused, never guessed."""

    def to_internal_value(self, value: Any) -> datetime:
        parsed = super().to_internal_value(value)
        if isinstance(value, str) and not _has_zone(value):
            raise serializers.ValidationError("must be RFC 3339 with a time zone (e.g. ...Z)")
        return parsed


def _has_zone(text: str) -> bool:
    tail = text.strip()[10:]
    return tail.endswith(("Z", "z")) or "+" in tail or "-" in tail


class LabelListField(serializers.ListField):
    child = serializers.CharField(max_length=100, allow_blank=False)

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", MAX_LABELS)
        super().__init__(**kwargs)


class SourceInput(StrictInput):
    kind = serializers.ChoiceField(choices=Source.Kind.choices)
    content = serializers.CharField(max_length=MAX_CONTENT_CHARS, trim_whitespace=False)
    external_ref = serializers.CharField(max_length=200, required=False, allow_blank=True)
    version = serializers.CharField(max_length=50, required=False, allow_blank=True)
    speaker = serializers.CharField(max_length=200, required=False, allow_blank=True)
    occurred_at = ZonedDateTimeField(required=False, allow_null=True)
    visibility = LabelListField(required=False, min_length=1)
    metadata = serializers.DictField(child=serializers.JSONField(), required=False)


class EntityInput(StrictInput):
    kind = serializers.CharField(max_length=50)
    name = serializers.CharField(max_length=200)
    aliases = serializers.ListField(child=serializers.CharField(max_length=200), required=False)
    external_ref = serializers.CharField(max_length=200, required=False, allow_blank=True)


class AliasInput(StrictInput):
    alias = serializers.CharField(max_length=200)
    # DRF's metaclass moves declared fields off the class, so "source" shadows nothing.
    source = serializers.CharField(  # type: ignore[assignment]
        max_length=40, required=False, allow_null=True
    )


class MatchInput(StrictInput):
    name = serializers.CharField(max_length=200)
    kind = serializers.CharField(max_length=50, required=False, allow_blank=True)


class ScenarioInput(StrictInput):
    kind = serializers.ChoiceField(choices=Scenario.Kind.choices)
    context = serializers.DictField(  # type: ignore[assignment]  # declared fields leave the class
        child=serializers.CharField(max_length=200), required=False
    )
    valid_at = ZonedDateTimeField(required=False, allow_null=True)
    expect = serializers.ChoiceField(choices=Scenario.Expect.choices)


class _ContentInput(StrictInput):
    value = serializers.JSONField()
    statement = serializers.CharField(max_length=4000)
    # Values as given (never trimmed), each at most the column that remembers it holds;
    # memory.rules.check_scope says the same for callers that skip this shape.
    scope = serializers.DictField(
        child=serializers.CharField(max_length=MAX_SCOPE_VALUE, trim_whitespace=False)
    )
    owner = serializers.CharField(max_length=150)
    expires_at = ZonedDateTimeField(allow_null=True)
    valid_from = ZonedDateTimeField(required=False, allow_null=True)
    valid_to = ZonedDateTimeField(required=False, allow_null=True)
    assertion = serializers.ChoiceField(choices=Assertion.choices, required=False)
    sources = serializers.ListField(child=serializers.CharField(max_length=40), required=False)
    basis = serializers.DictField(child=serializers.JSONField(), required=False)
    visibility = LabelListField(required=False, min_length=1)
    required_reviewers = serializers.ListField(
        child=serializers.CharField(max_length=150), required=False
    )
    scenarios = ScenarioInput(many=True, required=False)

    refused_members = dict.fromkeys(_CALLER_MAY_NOT_SET, "cannot be set by the caller")


class ValueOptionInput(StrictInput):
    # DRF's metaclass moves declared fields off the class, so "label" shadows nothing.
    label = serializers.CharField(  # type: ignore[assignment]
        max_length=200, required=False
    )
    value = serializers.JSONField()


class ProposalInput(_ContentInput):
    kind = serializers.ChoiceField(choices=MemoryKind.choices)
    subject = serializers.CharField(max_length=40, required=False, allow_null=True)
    subject_mention = serializers.CharField(max_length=200, required=False, allow_blank=True)
    field = serializers.RegexField(r"^[A-Za-z][A-Za-z0-9_.\-]{0,99}$", max_length=100)
    # Omitted only with ``value_mention`` (the value is unclear: a clarification asks).
    value = serializers.JSONField(required=False)
    value_mention = serializers.CharField(max_length=200, required=False, allow_blank=True)
    value_options = ValueOptionInput(many=True, required=False)
    # True: ``value`` is what it says ("it", the ISO code for Italian), never a referent.
    value_is_literal = serializers.BooleanField(
        required=False,
        help_text="true: 'value' is meant as said ('it', the ISO code for Italian; 'The "
        "Usual', a band), never read as pointing at something said before. Not with "
        "'value_mention'.",
    )
    # Omitted only when the field catalog gives the field a default expiry.
    expires_at = ZonedDateTimeField(required=False, allow_null=True)


class CorrectionInput(_ContentInput):
    """Every field optional: what is omitted is copied from the head version."""

    kind = serializers.ChoiceField(choices=MemoryKind.choices, required=False)
    subject = serializers.CharField(max_length=40, required=False)
    subject_mention = serializers.CharField(max_length=200, required=False, allow_blank=True)
    field = serializers.CharField(max_length=100, required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("value", "statement", "scope", "owner", "expires_at"):
            self.fields[name].required = False


class SharedFieldsSerializer(StrictInput):
    """An input shape whose fields are built and bound once per class, then shared by
    every instance. DRF deep-copies the declared fields for each instance so that one may
    change its own; input shapes never do, and on the resolve path the copy was a tenth of
    the request's CPU. The fields keep no per-request state: no context, no defaults
    computed from the request (a shape that needs them must not use this class)."""

    @cached_property
    def fields(self) -> BindingDict:
        shared: BindingDict | None = type(self).__dict__.get("_shared_fields")
        if shared is None:
            prototype = type(self)()
            shared = BindingDict(prototype)
            for name, field in prototype.get_fields().items():
                shared[name] = field
            type(self)._shared_fields = shared  # type: ignore[attr-defined]
        return shared


class ResolveInput(SharedFieldsSerializer):
    """The resolve body. ``agent_interface.resolve_input`` reads a plainly valid one without this
    serializer (the hot path): a field changed here is changed there too."""

    subject = serializers.CharField(max_length=40)
    fields = serializers.ListField(  # type: ignore[assignment]  # declared fields leave the class
        child=serializers.CharField(max_length=100),
        required=False,
        allow_empty=False,
        min_length=1,  # allow_empty says it first; min_length states it in the schema
        max_length=100,
    )
    context = serializers.DictField(  # type: ignore[assignment]  # declared fields leave the class
        child=serializers.CharField(max_length=200), required=False
    )
    valid_at = ZonedDateTimeField(required=False, allow_null=True)
    known_at = ZonedDateTimeField(required=False, allow_null=True)
    task_id = serializers.CharField(max_length=200, required=False, allow_null=True)
    explain = serializers.BooleanField(required=False, default=False)
