"""Proposals and corrections: new versions of memory items, checked against the rules of
their kind, recorded pending (or checking), with their side effects in the outbox."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from audit.chain import canonical_json, digest
from audit.services import audit_append
from core.errors import Conflict, InvalidContent, PreconditionRequired
from core.inputs import strict_int
from core.kinds import MemoryKind
from core.models import ScopeValue, Tenant
from core.principals import Principal
from memory import catalog, clarifications, events, generations, rules
from memory.effects import after_version_recorded
from memory.entities import require_live
from memory.lifecycle import version_transition
from memory.models import (
    Clarification,
    Entity,
    FieldDefinition,
    MemoryItem,
    MemoryVersion,
    Scenario,
    Source,
    Status,
)
from memory.references import check_value_references, record_value_references


@dataclass
class ProposalContent:
    """The content of one version, validated; also what a correction inherits from."""

    value: Any
    statement: str
    scope: dict[str, str]
    owner: User
    expires_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    assertion: str
    sources: list[Source]
    basis: dict[str, Any]
    visibility: list[str]
    required_reviewers: list[str]
    scenarios: list[dict[str, Any]] = field(default_factory=list)


def _validated_content(
    *,
    principal: Principal,
    kind: str,
    data: Mapping[str, Any],
    errors: rules.Errors,
    definition: FieldDefinition | None,
    value_pending: bool = False,
) -> ProposalContent | None:
    now = timezone.now()
    scope = data["scope"]
    expires_at = _expiry(definition, data, now, errors)
    rules.check_scope(kind, scope, errors)
    rules.check_expiry(kind, expires_at, now, errors)
    rules.check_validity(data.get("valid_from"), data.get("valid_to"), errors)
    rules.check_value(data.get("value"), errors)
    rules.check_labels(principal.tenant, data.get("visibility") or [], errors)
    check_value_references(principal.tenant, data.get("value"), errors)
    catalog.check_proposal(
        definition,
        kind=kind,
        value=data.get("value"),
        scope=scope,
        errors=errors,
        check_value=not value_pending,
    )
    for option in data.get("value_options") or []:
        option_errors = rules.Errors()
        catalog.check_proposal(
            definition, kind=kind, value=option["value"], scope={}, errors=option_errors
        )
        for message in option_errors.found.get("value", []):
            errors.add("value_options", message)
    owner = rules.find_owner(principal.tenant, data["owner"], errors)
    sources = rules.find_sources(principal, kind, data.get("sources") or [], errors)
    reviewers = list(data.get("required_reviewers") or [])
    rules.find_reviewers(principal.tenant, kind, reviewers, errors)
    if owner is None or errors.found:
        return None
    return ProposalContent(
        value=None if value_pending else data["value"],
        statement=data["statement"],
        scope=dict(scope),
        owner=owner,
        expires_at=expires_at,
        valid_from=data.get("valid_from"),
        valid_to=data.get("valid_to"),
        assertion=data.get("assertion") or "state",
        sources=sources,
        basis=dict(data.get("basis") or {}),
        visibility=list(data.get("visibility") or ["*"]),
        required_reviewers=reviewers,
        scenarios=list(data.get("scenarios") or []),
    )


def _expiry(
    definition: FieldDefinition | None,
    data: Mapping[str, Any],
    now: datetime,
    errors: rules.Errors,
) -> datetime | None:
    """``expires_at`` as given; omitted, the field catalog's default expiry for the field
    (a tenant admin's decision), else a 422: an expiry is never guessed."""
    if "expires_at" in data:
        given: datetime | None = data["expires_at"]
        return given
    default = catalog.default_expiry(definition, now)
    if default is None:
        errors.add(
            "expires_at",
            "is required (null only for a preference); the field catalog gives this field "
            "no default expiry",
        )
    return default


def _value_mention(
    data: Mapping[str, Any], definition: FieldDefinition | None, errors: rules.Errors
) -> str:
    """What the value points at instead of naming it ("there"), or "": never for a value
    that is literal, by the proposer's word (``value_is_literal``) or the field catalog's
    schema ("it", the ISO code for Italian)."""
    mention = (data.get("value_mention") or "").strip()
    literal = data.get("value_is_literal") is True or catalog.makes_value_literal(definition)
    said = None if literal else clarifications.referent(data.get("value"))
    if mention and data.get("value_is_literal") is True:
        errors.add(
            "value_is_literal",
            "a literal value is given as 'value'; 'value_mention' is for one that points",
        )
    elif mention and "value" in data and said is None:
        errors.add("value_mention", "give either 'value' or 'value_mention', not both")
    if not mention and "value" not in data:
        errors.add("value", "is required (or 'value_mention' when the value is unclear)")
    if data.get("value_options") and not (mention or said):
        errors.add("value_options", "only with 'value_mention' (or a value such as 'there')")
    return mention or said or ""


def _approvals_required(tenant: Tenant, kind: str) -> int:
    return {MemoryKind.PREFERENCE: 0, MemoryKind.TASK_FACT: 1}.get(
        MemoryKind(kind), tenant.approvals_required
    )


def _initial_status(kind: str, subject: Entity | None, *, unclear: bool = False) -> Status:
    if subject is None or unclear:
        return Status.HELD_UNRESOLVED
    return Status.CHECKING if kind == MemoryKind.PREFERENCE else Status.PENDING_REVIEW


def _create_version(
    *,
    principal: Principal,
    item: MemoryItem,
    number: int,
    content: ProposalContent,
    unclear: bool = False,
) -> MemoryVersion:
    now = timezone.now()
    required_visibility = [list(s.visibility) for s in content.sources]
    if content.visibility != ["*"]:
        required_visibility.append(content.visibility)
    version = MemoryVersion.objects.create(
        item=item,
        number=number,
        tenant=item.tenant,
        kind=item.kind,
        subject=item.subject,
        field=item.field,
        value=content.value,
        statement=content.statement,
        scope=content.scope,
        owner=content.owner,
        proposed_by=principal.name,
        proposer_user=principal.user,
        expires_at=content.expires_at,
        valid_from=content.valid_from,
        valid_to=content.valid_to,
        assertion=content.assertion,
        source_ids=[s.pk for s in content.sources],
        required_visibility=required_visibility,
        basis=content.basis,
        visibility=content.visibility,
        required_reviewers=content.required_reviewers,
        approvals_required=_approvals_required(item.tenant, item.kind),
        status=_initial_status(item.kind, item.subject, unclear=unclear),
        recorded_at=now,
        status_changed_at=now,
    )
    version.sources.set(content.sources)
    record_value_references(version)
    _remember_scope_values(item.tenant, content.scope)
    Scenario.objects.bulk_create(
        Scenario(
            version=version,
            kind=s["kind"],
            context=s.get("context") or {},
            valid_at=s.get("valid_at"),
            expect=s["expect"],
            created_by=principal.name,
        )
        for s in content.scenarios
    )
    return version


def _remember_scope_values(tenant: Tenant, scope: Mapping[str, str]) -> None:
    values = [
        ScopeValue(tenant=tenant, dimension=d, value=v) for d, v in scope.items() if d != "tenant"
    ]
    ScopeValue.objects.bulk_create(values, ignore_conflicts=True)


def _version_audit_data(version: MemoryVersion) -> dict[str, Any]:
    """Ids, names and digests: never the value or statement themselves."""
    return {
        "version": version.number,
        "kind": version.kind,
        "subject": version.subject_id,
        "field": version.field,
        "status": version.status,
        "value_sha256": digest(version.value),
        "statement_sha256": digest(version.statement),
        "scope_dimensions": sorted(version.scope),
        "scope_sha256": digest(version.scope),
        "sources": version.source_ids,
        "owner": version.owner.get_username(),
        "expires_at": version.expires_at.isoformat() if version.expires_at else None,
    }


def memory_propose(*, principal: Principal, data: Mapping[str, Any]) -> MemoryVersion:
    """Version 1 of a new item; never active until reviewed (or, for a preference, checked)."""
    errors = rules.Errors()
    kind = data["kind"]
    subject_id, mention = data.get("subject"), (data.get("subject_mention") or "").strip()
    if bool(subject_id) == bool(mention):
        errors.add("subject", "give exactly one of 'subject' or 'subject_mention'")
    subject = rules.find_subject(principal.tenant, subject_id, errors) if subject_id else None
    definition = catalog.definitions_for(principal.tenant.pk, {data["field"]}).get(data["field"])
    value_mention = _value_mention(data, definition, errors)
    content = _validated_content(
        principal=principal,
        kind=kind,
        data=data,
        errors=errors,
        definition=definition,
        value_pending=bool(value_mention),
    )
    options: list[dict[str, Any]] = []
    if value_mention and content is not None:
        options = clarifications.value_options(
            principal,
            subject_id=subject.pk if subject else None,
            field=data["field"],
            given=data.get("value_options") or [],
        )
        # With the subject still a mention, the values it may mean are not known yet: the
        # question waits for the subject and then offers them (offer_subject_values).
        if not options and subject is not None:
            errors.add(
                "value_mention",
                f"Memgov holds no {data['field']} for this subject that {value_mention!r} could "
                "mean: give the value itself, or the candidates as 'value_options'",
            )
    errors.raise_if_any()
    assert content is not None  # noqa: S101 - no errors means content was built
    with transaction.atomic(durable=True):
        if subject is not None:
            require_live([subject.pk], member="subject")  # not erased since it was found
        item = MemoryItem.objects.create(
            tenant=principal.tenant,
            kind=kind,
            subject=subject,
            subject_mention=mention,
            field=data["field"],
            head_version=1,
        )
        version = _create_version(
            principal=principal, item=item, number=1, content=content, unclear=bool(value_mention)
        )
        if mention:
            clarifications.ask(
                version=version,
                member=Clarification.Member.SUBJECT,
                mention=mention,
                options=clarifications.subject_options(principal, mention),
            )
        if value_mention:
            clarifications.ask(
                version=version,
                member=Clarification.Member.VALUE,
                mention=value_mention,
                options=options,
            )
        audit_append(
            tenant=principal.tenant,
            actor=principal.name,
            action="memory.proposed",
            target_type="memory",
            target_id=item.pk,
            data=_version_audit_data(version),
        )
        _after_new_version(version)
    return version


def _parse_if_match(if_match: str | None) -> int:
    if not if_match:
        raise PreconditionRequired("A correction needs 'If-Match: \"<head version>\"'.")
    number = strict_int(if_match.strip().removeprefix("W/").strip('"'), max_digits=9)
    if number is None:
        raise InvalidContent({"If-Match": ['must be the head version number, e.g. "2"']})
    return number


def _inherited(head: MemoryVersion, data: Mapping[str, Any]) -> dict[str, Any]:
    """A correction copies every field it omits from the head version."""
    base: dict[str, Any] = {
        "value": head.value,
        "statement": head.statement,
        "scope": head.scope,
        "owner": head.owner.get_username(),
        "expires_at": head.expires_at,
        "valid_from": head.valid_from,
        "valid_to": head.valid_to,
        "assertion": head.assertion,
        "sources": head.source_ids,
        "basis": head.basis,
        "visibility": head.visibility,
        "required_reviewers": head.required_reviewers,
        "scenarios": [],
    }
    base.update({k: v for k, v in data.items() if k in base})
    return base


def _restated(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _check_statement_follows_value(
    kind: str, head: MemoryVersion, merged: Mapping[str, Any], errors: rules.Errors
) -> None:
    """A preference is not reviewed, so its statement is what people read of it: a new
    value under the old statement ("normally at home" over "5 Dock Road") misleads them.
    Omitting the statement copies the old one, so it is refused the same way."""
    if kind != MemoryKind.PREFERENCE:
        return
    if canonical_json(merged["value"]) == canonical_json(head.value):
        return
    if _comparable(merged["statement"]) == _comparable(head.statement):
        errors.add(
            "statement",
            "the value changes, so the statement must change too: say what the new value "
            "means (the current statement describes the old value)",
        )


def _comparable(text: str) -> str:
    return " ".join(text.split()).casefold()


def memory_correct(
    *, principal: Principal, item: MemoryItem, if_match: str | None, data: Mapping[str, Any]
) -> MemoryVersion:
    """A new head version, accepted only against the current head (compare-and-set)."""
    expected = _parse_if_match(if_match)
    lineage = {
        "kind": item.kind,
        "subject": item.subject_id,
        "subject_mention": item.subject_mention,
        "field": item.field,
    }
    errors = rules.Errors()
    for name, value in data.items():
        if name in lineage and _restated(value) != lineage[name]:
            errors.add(name, "is fixed for a lineage; propose a new memory instead")
    errors.raise_if_any()
    with transaction.atomic(durable=True):
        locked = (
            # of=self: PostgreSQL cannot lock the nullable side (subject) of an outer join.
            MemoryItem.objects.select_for_update(of=("self",), no_key=True)
            .select_related("tenant", "subject")
            .get(pk=item.pk)
        )
        if locked.subject_id is not None:
            # An erased person's memories take no correction: it would be new data on her.
            require_live([locked.subject_id], member="subject")
        if locked.head_version != expected:
            raise Conflict(
                f"Version {expected} is not the head; the head is {locked.head_version}.",
                current_version=locked.head_version,
            )
        head = locked.versions.select_related("owner").get(number=locked.head_version)
        merged = _inherited(head, data)
        _check_statement_follows_value(locked.kind, head, merged, errors)
        content = _validated_content(
            principal=principal,
            kind=locked.kind,
            data=merged,
            errors=errors,
            definition=catalog.definitions_for(locked.tenant_id, {locked.field}).get(locked.field),
        )
        errors.raise_if_any()
        assert content is not None  # noqa: S101 - no errors means content was built
        version = _create_version(
            principal=principal, item=locked, number=head.number + 1, content=content
        )
        locked.head_version = version.number
        locked.save(update_fields=["head_version"])
        if head.status in (
            Status.PENDING_REVIEW,
            Status.CHECKING,
            Status.CHECKS_FAILED,
            Status.HELD_UNRESOLVED,
        ):
            version_transition(
                version=head,
                to=Status.SUPERSEDED,
                actor=principal.name,
                reason=f"corrected by version {version.number}",
            )
        audit_append(
            tenant=locked.tenant,
            actor=principal.name,
            action="memory.corrected",
            target_type="memory",
            target_id=locked.pk,
            data={**_version_audit_data(version), "supersedes": head.number},
        )
        _after_new_version(version)
        # The active version's answers now say pending_correction: true.
        generations.invalidate_subject_on_commit([(locked.tenant_id, locked.subject_id)])
    return version


def _after_new_version(version: MemoryVersion) -> None:
    """Side effects after commit: checks for a preference, notifications for reviewers,
    and the webhooks' ``memory.pending_review``."""

    after_version_recorded(version)
    if version.status == Status.PENDING_REVIEW:
        events.event_emit(
            tenant=version.tenant,
            event_type=events.MEMORY_PENDING_REVIEW,
            data=events.version_data(version, previous=None, reason=""),
        )
