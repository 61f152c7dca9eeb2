"""A field's value as a person types it: the form field the field catalog's
``value_schema`` calls for (issue 43, point 9).

A string field is a text box (no quotes to type), an integer or a number a number input,
a boolean a checkbox, an enum a select of its values. A field with no catalog entry is
typed as its current value is (most hold text). Anything else — an object, an array, a
union of types — is JSON in a text area, and a parse error says where it is, beside the
field, with what was typed kept. The service
(``memory.proposals``) still checks the value against the whole schema."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django import forms

from memory.catalog import definitions_for

JSON_HELP = (
    'JSON: text in double quotes, e.g. "4 Dock Road"; numbers, true, false and null as '
    "they are; {…} for an object, […] for a list."
)
SCALAR_TYPES = ("string", "integer", "number", "boolean")


class JsonValueField(forms.JSONField):
    """Any JSON value, typed as JSON. Django's field keeps what was typed when it does not
    parse; this one also says what is wrong and where, in words."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value.strip() and not self.disabled:
            try:
                json.loads(value)
            except json.JSONDecodeError as exc:
                raise forms.ValidationError(
                    f"This is not JSON: {exc.msg.lower()} at line {exc.lineno}, column "
                    f'{exc.colno}. Text goes in double quotes, e.g. "{value.strip()[:40]}".',
                    code="invalid",
                ) from exc
        return super().to_python(value)


class NumberField(forms.FloatField):
    """A JSON number: 4 stays 4 (an integer), 4.5 stays 4.5."""

    widget = forms.NumberInput(attrs={"step": "any"})

    def clean(self, value: Any) -> Any:
        number = super().clean(value)
        if isinstance(number, float) and number.is_integer():
            return int(number)
        return number


def _enum(schema: Mapping[str, Any]) -> list[Any] | None:
    values = schema.get("enum")
    if isinstance(values, list) and values and all(not isinstance(v, dict | list) for v in values):
        return values
    return None


def _label(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _bound(schema: Mapping[str, Any], key: str) -> Any:
    value = schema.get(key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def value_field(schema: Mapping[str, Any] | None, *, help_text: str = "") -> forms.Field:
    """The form field for a value of this schema (see the module's docstring)."""
    schema = schema if isinstance(schema, Mapping) else {}
    enum = _enum(schema)
    if enum is not None:
        return forms.TypedChoiceField(
            choices=[(json.dumps(v, ensure_ascii=False), _label(v)) for v in enum],
            coerce=json.loads,
            help_text=help_text or "One of the values the field catalog allows.",
        )
    kind = schema.get("type")
    if kind == "string":
        length = schema.get("maxLength")
        return forms.CharField(
            strip=False,
            max_length=length if isinstance(length, int) else None,
            help_text=help_text or "Type the text as it is, without quotes.",
        )
    if kind == "integer":
        return forms.IntegerField(
            min_value=_bound(schema, "minimum"),
            max_value=_bound(schema, "maximum"),
            help_text=help_text or "A whole number.",
        )
    if kind == "number":
        return NumberField(
            min_value=_bound(schema, "minimum"),
            max_value=_bound(schema, "maximum"),
            help_text=help_text or "A number.",
        )
    if kind == "boolean":
        return forms.BooleanField(
            required=False, help_text=help_text or "Ticked means true, empty means false."
        )
    return JsonValueField(
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text=help_text or JSON_HELP,
    )


def shown_value(schema: Mapping[str, Any] | None, value: Any) -> Any:
    """The field's initial value as its widget takes it (an enum's choice key)."""
    if _enum(schema if isinstance(schema, Mapping) else {}) is not None:
        return json.dumps(value, ensure_ascii=False)
    return value


def schema_for(tenant_id: int, field: str) -> Mapping[str, Any] | None:
    """The field catalog's ``value_schema`` for a field (None when it has no entry)."""
    definition = definitions_for(tenant_id, {field}).get(field)
    return definition.value_schema if definition is not None else None


def correction_schema(tenant_id: int, field: str, current: Any) -> Mapping[str, Any] | None:
    """The schema a correction's value box follows: the catalog's, or, for a field with
    no entry, the type of the value it corrects (text stays a text box)."""
    schema = schema_for(tenant_id, field)
    if schema is not None:
        return schema
    if isinstance(current, bool):
        return {"type": "boolean"}
    if isinstance(current, str):
        return {"type": "string"}
    if isinstance(current, int):
        return {"type": "integer"}
    if isinstance(current, float):
        return {"type": "number"}
    return None
