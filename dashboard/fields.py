"""The field catalog (docs/api.md, Field catalog): every person of the tenant reads it; a
tenant admin edits an entry through the same answer function the REST ``PUT`` calls."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from rest_framework.exceptions import ValidationError

from agent_interface.catalog import field_defined
from approvals.emails import kind_name
from core.authority import may_manage_fields, require_manage_fields
from core.errors import DomainError
from core.kinds import MemoryKind
from core.principals import Principal
from dashboard.access import dashboard_view, page_context
from dashboard.forms import in_sentences
from memory.catalog import field_list, field_representation


class FieldForm(forms.Form):
    name = forms.CharField(max_length=100, label="Field name")
    # The entry the form was opened on (its link in the table); empty for a new field, so
    # typing an existing name never replaces that entry unawares (issue 43, point 11).
    editing = forms.CharField(required=False, max_length=100, widget=forms.HiddenInput)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    value_schema = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "class": "code"}),
        help_text='A JSON Schema, written as JSON (double quotes), e.g. {"type": "string"}; '
        "the schema shown in the table above can be pasted here. Empty takes any value.",
    )
    kinds = forms.MultipleChoiceField(
        choices=[(kind, kind_name(kind)) for kind in MemoryKind.values],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every kind.",
    )
    required_scope = forms.CharField(
        required=False, help_text="Scope dimensions every proposal must name, comma separated."
    )
    default_expiry_days = forms.IntegerField(required=False, min_value=1, max_value=3650)
    system_name = forms.CharField(
        required=False,
        max_length=200,
        label="Authoritative system",
        help_text="The system of record; memory of this field is then only advisory.",
    )
    system_url = forms.CharField(required=False, max_length=2000, label="Its URL")
    system_tool = forms.CharField(required=False, max_length=200, label="Its tool name")

    def clean_value_schema(self) -> Any:
        text = self.cleaned_data["value_schema"].strip()
        try:
            schema = json.loads(text) if text else {}
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"This is not JSON (line {exc.lineno}, column {exc.colno}): "
                f"{exc.msg[:1].lower()}{exc.msg[1:]}. Write the schema as JSON, with double "
                "quotes, as the table above shows it."
            ) from exc
        if not isinstance(schema, dict):
            raise forms.ValidationError(
                'A schema is a JSON object, between { and }, such as {"type": "string"}.'
            )
        return schema

    def body(self) -> dict[str, Any]:
        """The REST ``PUT`` body this form stands for."""
        data = self.cleaned_data
        body: dict[str, Any] = {
            "description": data["description"],
            "value_schema": data["value_schema"],
            "kinds": list(data["kinds"]),
            "required_scope": [d.strip() for d in data["required_scope"].split(",") if d.strip()],
            "default_expiry_days": data["default_expiry_days"],
            "authoritative_system": None,
        }
        if data["system_name"].strip():
            body["authoritative_system"] = {
                "name": data["system_name"].strip(),
                "url": data["system_url"].strip() or None,
                "tool": data["system_tool"].strip() or None,
            }
        return body


def schema_json(schema: Any) -> str:
    """A value schema as the page shows it and the form takes it back: JSON, indented
    (issue 43, point 11: a Python dict failed when pasted back)."""
    return json.dumps(schema, indent=2, ensure_ascii=False)


# Where a refusal of the catalog's input shape is shown: beside the field it names.
SYSTEM_FIELDS = {"name": "system_name", "url": "system_url", "tool": "system_tool"}


def _problems(found: Any) -> list[str]:
    if isinstance(found, Mapping):
        return [p for inner in found.values() for p in _problems(inner)]
    if isinstance(found, list | tuple):
        return [p for inner in found for p in _problems(inner)]
    return [str(found)]


def place_errors(form: FieldForm, errors: Mapping[str, Any]) -> None:
    """The service's 422 beside the fields it names, the rest above the form; what the
    person typed stays in the form."""
    for member, found in errors.items():
        if member == "authoritative_system" and isinstance(found, Mapping):
            for inner, problems in found.items():
                for problem in _problems(problems):
                    form.add_error(SYSTEM_FIELDS.get(inner, "system_name"), in_sentences(problem))
            continue
        target = "system_name" if member == "authoritative_system" else member
        for problem in _problems(found):
            form.add_error(target if target in form.fields else None, in_sentences(problem))


def _initial(entry: dict[str, Any]) -> dict[str, Any]:
    system = entry["authoritative_system"] or {}
    return {
        "name": entry["name"],
        "editing": entry["name"],
        "description": entry["description"],
        "value_schema": schema_json(entry["value_schema"]) if entry["value_schema"] else "",
        "kinds": entry["kinds"],
        "required_scope": ", ".join(entry["required_scope"]),
        "default_expiry_days": entry["default_expiry_days"],
        "system_name": system.get("name", ""),
        "system_url": system.get("url") or "",
        "system_tool": system.get("tool") or "",
    }


def _render(
    request: HttpRequest, principal: Principal, form: FieldForm | None = None, status: int = 200
) -> HttpResponse:
    entries = [field_representation(d) for d in field_list(principal)]
    for entry in entries:
        entry["value_schema_json"] = schema_json(entry["value_schema"])
    editing = next((e for e in entries if e["name"] == request.GET.get("name")), None)
    if form is None:
        form = FieldForm(initial=_initial(editing) if editing else None)
    return render(
        request,
        "dashboard/fields.html",
        page_context(principal, entries=entries, form=form, can_edit=may_manage_fields(principal)),
        status=status,
    )


@require_GET
@dashboard_view
def fields_page(request: HttpRequest, principal: Principal) -> HttpResponse:
    return _render(request, principal)


@require_POST
@dashboard_view
def field_save(request: HttpRequest, principal: Principal) -> HttpResponse:
    require_manage_fields(principal)  # before reading the form: no errors for the refused
    form = FieldForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Nothing was saved: see the field marked below.")
        return _render(request, principal, form, status=422)
    name = form.cleaned_data["name"]
    if name != form.cleaned_data["editing"] and any(d.name == name for d in field_list(principal)):
        form.add_error(
            "name",
            f"A field named “{name}” is in the catalog already. To change it, open it from "
            "the table above (its name is a link): saving here would replace its whole "
            "entry, its authoritative system too.",
        )
        messages.error(request, "Nothing was saved: see the field marked below.")
        return _render(request, principal, form, status=409)
    try:
        field_defined(principal, name, form.body())
    except (DomainError, ValidationError) as exc:
        errors = getattr(exc, "errors", None) or getattr(exc, "detail", None)
        if isinstance(errors, Mapping):
            place_errors(form, errors)
        else:
            form.add_error(None, in_sentences(str(getattr(exc, "detail", exc))))
        messages.error(request, "Nothing was saved: see the field marked below.")
        return _render(request, principal, form, status=getattr(exc, "status", 422))
    messages.success(request, f"Field {name} saved.")
    return redirect(reverse("dashboard:fields"))
