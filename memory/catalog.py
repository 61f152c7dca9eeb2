"""The field catalog (docs/api.md, Field catalog): per tenant and field, the JSON Schema
its values must match, the kinds and scope dimensions it takes, its default expiry, and the
authoritative system that holds its committed state.

A proposal is checked against its field's entry (``check_proposal``); a field with an
authoritative system is only advisory in memory: resolve and the context block say so and
name the system. A change of the catalog moves the tenant's policy generation on inside
its transaction, so no cached answer keeps the old marking (``memory.generations``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.chain import digest
from audit.services import audit_append
from core import authority
from core.errors import NotFound
from core.principals import Principal
from core.times import iso
from memory import generations, value_schemas
from memory.models import FieldDefinition
from memory.rules import Errors


def authoritative_system(definition: FieldDefinition) -> dict[str, Any] | None:
    """``{"name", "url", "tool"}`` (url and tool may be null), or None."""
    if not definition.authority_name:
        return None
    return system_of(definition.authority_name, definition.authority_url, definition.authority_tool)


def system_of(name: str, url: str, tool: str) -> dict[str, Any]:
    return {"name": name, "url": url or None, "tool": tool or None}


def advisory_words(system_name: str) -> str:
    """What a value of a field with an authoritative system is, in the words the context
    block's ``[advisory]`` lines and the dashboard both use (issue 43, point 11)."""
    return f"memory only — the system of record is {system_name}"


def advisory_for(tenant_id: int, field_name: str) -> str:
    """``advisory_words`` for a field whose catalog entry names a system, else ""."""
    definition = definitions_for(tenant_id, {field_name}).get(field_name)
    system = authoritative_system(definition) if definition is not None else None
    return advisory_words(system["name"]) if system is not None else ""


def field_representation(definition: FieldDefinition) -> dict[str, Any]:
    return {
        "name": definition.name,
        "description": definition.description,
        "value_schema": definition.value_schema,
        "kinds": list(definition.kinds),
        "required_scope": list(definition.required_scope),
        "default_expiry_days": definition.default_expiry_days,
        "authoritative_system": authoritative_system(definition),
        "updated_by": definition.updated_by,
        "updated_at": iso(definition.updated_at),
    }


def field_list(principal: Principal) -> list[FieldDefinition]:
    """Every principal of the tenant may read the catalog: agents need it to propose."""
    return list(FieldDefinition.objects.filter(tenant=principal.tenant).order_by("name"))


def field_get(principal: Principal, name: str) -> FieldDefinition:
    definition = FieldDefinition.objects.filter(tenant=principal.tenant, name=name).first()
    if definition is None:
        raise NotFound(f"The field catalog has no entry {name!r}.")
    return definition


def definitions_for(tenant_id: int, names: set[str]) -> dict[str, FieldDefinition]:
    if not names:
        return {}
    rows = FieldDefinition.objects.filter(tenant_id=tenant_id, name__in=names)
    return {row.name: row for row in rows}


def field_define(*, principal: Principal, name: str, data: Mapping[str, Any]) -> FieldDefinition:
    """Create or replace the entry (PUT semantics: what is omitted takes its default), audited,
    and end every cached answer of the tenant, which may carry the old marking."""
    authority.require_manage_fields(principal)
    errors = Errors()
    for message in value_schemas.schema_problems(data.get("value_schema", {})):
        errors.add("value_schema", message)
    system = data.get("authoritative_system")
    if system is not None and not str(system.get("name") or "").strip():
        errors.add("authoritative_system", "needs a 'name' (the system of record)")
    errors.raise_if_any()
    values: dict[str, Any] = {
        "description": data.get("description", ""),
        "value_schema": data.get("value_schema", {}),
        "kinds": sorted(set(data.get("kinds") or [])),
        "required_scope": sorted(set(data.get("required_scope") or [])),
        "default_expiry_days": data.get("default_expiry_days"),
        "authority_name": (system or {}).get("name", "").strip(),
        "authority_url": (system or {}).get("url") or "",
        "authority_tool": (system or {}).get("tool") or "",
        "updated_by": principal.name,
        "updated_at": timezone.now(),
    }
    with transaction.atomic(durable=True):
        before = (
            FieldDefinition.objects.select_for_update()
            .filter(tenant=principal.tenant, name=name)
            .first()
        )
        definition, created = FieldDefinition.objects.update_or_create(
            tenant=principal.tenant, name=name, defaults=values
        )
        audit_append(
            tenant=principal.tenant,
            actor=principal.name,
            action="field.created" if created else "field.changed",
            target_type="field",
            target_id=name,
            data={
                "before_sha256": None if before is None else digest(_audited(before)),
                "after_sha256": digest(_audited(definition)),
                "kinds": definition.kinds,
                "required_scope": definition.required_scope,
                "default_expiry_days": definition.default_expiry_days,
                "authoritative": bool(definition.authority_name),
            },
        )
        # Resolve and context answers mark this field's facts (advisory or not).
        generations.invalidate_policy_on_commit(principal.tenant.pk)
    return definition


def _audited(definition: FieldDefinition) -> dict[str, Any]:
    body = field_representation(definition)
    return {k: v for k, v in body.items() if k not in ("updated_by", "updated_at")}


def makes_value_literal(definition: FieldDefinition | None) -> bool:
    """The field's schema says what a value is (an enum or const, a pattern, a type that
    is not a string): then "it" is the ISO code for Italian, not a pointer to something
    said before, and no clarification is asked (issue 44, point 11)."""
    schema = definition.value_schema if definition is not None else None
    if not isinstance(schema, Mapping) or not schema:
        return False
    if any(keyword in schema for keyword in ("enum", "const", "pattern")):
        return True
    kinds = schema.get("type")
    if isinstance(kinds, str):
        kinds = [kinds]
    return isinstance(kinds, list) and bool(kinds) and "string" not in kinds


def default_expiry(definition: FieldDefinition | None, now: datetime) -> datetime | None:
    if definition is None or definition.default_expiry_days is None:
        return None
    return now + timedelta(days=definition.default_expiry_days)


def check_proposal(
    definition: FieldDefinition | None,
    *,
    kind: str,
    value: Any,
    scope: Any,
    errors: Errors,
    check_value: bool = True,
) -> None:
    """A proposal for a catalogued field: its kind, scope and value as the catalog says
    (each broken rule a 422 naming the member and the field)."""
    if definition is None:
        return
    name = definition.name
    if definition.kinds and kind not in definition.kinds:
        allowed = ", ".join(definition.kinds)
        errors.add("kind", f"the field catalog allows only {allowed} for field {name!r}")
    if isinstance(scope, Mapping):
        missing = [d for d in definition.required_scope if d not in scope]
        if missing:
            errors.add(
                "scope",
                f"the field catalog requires {', '.join(missing)} in the scope of field {name!r}",
            )
    if check_value and definition.value_schema:
        _check_value(definition, value, errors)


def _check_value(definition: FieldDefinition, value: Any, errors: Errors) -> None:
    """The value against the field's schema, run only as ``memory.value_schemas`` allows:
    a stored schema those rules refuse (stored before them, or written around the API) is
    not run, and the proposal is refused rather than taken unchecked, naming the field so
    a tenant admin can put the entry again."""
    name = definition.name
    checker = value_schemas.checker_for(definition.value_schema)
    if checker.problems:
        errors.add(
            "value",
            f"cannot be checked: the field catalog's value_schema for field {name!r} is "
            f"unusable ({checker.problems[0]}); a tenant admin must put the field again",
        )
        return
    try:
        problem = checker.first_error(value)
    except value_schemas.SchemaTooCostly:
        errors.add(
            "value",
            f"cannot be checked: matching it against the field catalog's schema for field "
            f"{name!r} takes more than {value_schemas.MAX_CHECK_STEPS} steps",
        )
        return
    if problem is not None:
        where = "/".join(str(p) for p in problem.absolute_path)
        at = f" at /{where}" if where else ""
        errors.add(
            "value",
            f"does not match the field catalog's schema for field {name!r}{at}: {problem.message}",
        )
