"""The proposal rules of docs/api.md (Memories): each broken rule names its field.

Shape (types) is checked by the API serializer; these are the rules that need the tenant's
data (owner, sources, subject) or span fields. All are checked before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import connection

from audit.chain import canonical_json
from core import authority
from core.errors import InvalidContent
from core.kinds import MemoryKind
from core.models import ApiKey, Membership, Tenant
from core.principals import Principal, can_see
from memory.entities import raise_erased
from memory.models import Entity, MemoryVersion, Source, Verification

DIMENSION_RE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
# The longest scope value: each is remembered in a column of this size (core.ScopeValue),
# which PostgreSQL enforces and SQLite does not, so the rule is checked here (issue 44).
MAX_SCOPE_VALUE = 200
TENANT_WIDE = authority.TENANT_WIDE
# A preference follows its person, at most narrowed to one task (docs/design.md, Memory classes).
PREFERENCE_DIMENSIONS = frozenset({"task"})
MAX_VALUE_BYTES = 8 * 1024
EVIDENCE_KINDS = {Source.Kind.BUSINESS_RECORD, Source.Kind.APPROVAL_RECORD}
# Scenario checks probe a day outside the valid interval: that day must be representable.
EARLIEST = datetime.min.replace(tzinfo=UTC) + timedelta(days=2)
LATEST = datetime.max.replace(tzinfo=UTC) - timedelta(days=2)


@dataclass
class Errors:
    """Collects every broken rule so one answer names them all."""

    found: dict[str, list[str]] = field(default_factory=dict)

    def add(self, name: str, message: str) -> None:
        self.found.setdefault(name, []).append(message)

    def raise_if_any(self) -> None:
        if self.found:
            raise InvalidContent(self.found)


def check_labels(
    tenant: Tenant, labels: Sequence[str], errors: Errors, member: str = "visibility"
) -> None:
    """Every label must be one some person, key or source of the tenant holds: a made-up
    label makes a fact no one can see, which only costs every reader (issue 42)."""
    wanted = {label for label in labels if label != "*"}
    if not wanted:
        return
    held = Membership.objects.filter(tenant=tenant, user__is_active=True).values_list("labels")
    keys = ApiKey.objects.filter(tenant=tenant, revoked_at__isnull=True).values_list("labels")
    wanted -= {label for (row,) in [*held, *keys] for label in row}
    if wanted:
        wanted -= source_labels(tenant, wanted)
    for label in sorted(wanted):
        errors.add(member, f"no person, key or source of this tenant holds the label {label!r}")


def source_labels(tenant: Tenant, labels: set[str]) -> set[str]:
    """Which of ``labels`` some source of the tenant carries (read only for labels no
    person or key holds)."""
    column = "label" if connection.vendor == "postgresql" else "label.value"
    each = "jsonb_array_elements_text" if connection.vendor == "postgresql" else "json_each"
    marks = ", ".join(["%s"] * len(labels))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT {column} FROM memory_source s, {each}(s.visibility) label "  # noqa: S608 - constant SQL, bound values
            f"WHERE s.tenant_id = %s AND {column} IN ({marks})",
            [tenant.pk, *sorted(labels)],
        )
        return {row[0] for row in cursor.fetchall()}


def check_scope(kind: str, scope: Any, errors: Errors) -> None:
    if not isinstance(scope, Mapping):
        errors.add("scope", "must be an object of dimension → value")
        return
    for dim, value in scope.items():
        if not isinstance(dim, str) or not DIMENSION_RE.match(dim):
            errors.add("scope", f"dimension {dim!r} must match ^[a-z][a-z0-9_]{{0,31}}$")
        if not isinstance(value, str) or not value.strip():
            errors.add("scope", f"value of {dim!r} must be a non-empty string")
        elif len(value) > MAX_SCOPE_VALUE:
            errors.add("scope", f"value of {dim!r} must be at most {MAX_SCOPE_VALUE} characters")
    if "tenant" in scope and dict(scope) != TENANT_WIDE:
        errors.add("scope", 'tenant-wide scope is exactly {"tenant": "*"}')
    if kind == MemoryKind.TASK_FACT and "task" not in scope:
        errors.add("scope", "a task_fact's scope must contain 'task'")
    if kind == MemoryKind.PREFERENCE and set(scope) - PREFERENCE_DIMENSIONS:
        errors.add(
            "scope",
            "a preference's scope is {} or names only 'task': a preference is not reviewed, "
            "so it cannot carry a business scope; file a task_fact or an enterprise_rule "
            "instead, which a reviewer approves",
        )
    if kind == MemoryKind.ENTERPRISE_RULE and not scope:
        errors.add("scope", 'an enterprise_rule needs at least one dimension (or {"tenant": "*"})')


def check_expiry(kind: str, expires_at: datetime | None, now: datetime, errors: Errors) -> None:
    if expires_at is None:
        if kind != MemoryKind.PREFERENCE:
            errors.add("expires_at", "only a preference may have no expiry")
    elif expires_at <= now:
        errors.add("expires_at", "must be in the future")


def check_validity(valid_from: datetime | None, valid_to: datetime | None, errors: Errors) -> None:
    for name, moment in (("valid_from", valid_from), ("valid_to", valid_to)):
        if moment is not None and not EARLIEST <= moment <= LATEST:
            errors.add(name, "must be between 0001-01-03 and 9999-12-29")
    if valid_from and valid_to and valid_from > valid_to:
        errors.add("valid_to", "must not be before valid_from")


def check_value(value: Any, errors: Errors) -> None:
    if len(canonical_json(value).encode("utf-8")) > MAX_VALUE_BYTES:
        errors.add("value", f"must be at most {MAX_VALUE_BYTES} bytes of JSON")


def find_owner(tenant: Tenant, username: str, errors: Errors) -> User | None:
    owner = (
        get_user_model()
        .objects.filter(username=username, membership__tenant=tenant, is_active=True)
        .first()
    )
    if owner is None:
        errors.add("owner", f"no user {username!r} in this tenant")
    return owner


def find_subject(tenant: Tenant, subject_id: str, errors: Errors) -> Entity | None:
    entity = Entity.objects.filter(tenant=tenant, pk=subject_id).first()
    if entity is None:
        errors.add("subject", f"no entity {subject_id!r} in this tenant")
    elif entity.erased_at is not None:
        raise_erased(entity.pk, member="subject")  # 410, whatever else is wrong
    return entity


def find_sources(
    principal: Principal, kind: str, source_ids: Sequence[str], errors: Errors
) -> list[Source]:
    found = {s.pk: s for s in Source.objects.filter(tenant=principal.tenant, pk__in=source_ids)}
    sources: list[Source] = []
    for source_id in dict.fromkeys(source_ids):
        source = found.get(source_id)
        if source is None or not can_see(source.visibility, principal.labels):
            errors.add("sources", f"no source {source_id!r} visible to you in this tenant")
        elif source.revoked_at is not None:
            errors.add("sources", f"source {source_id!r} is revoked")
        else:
            sources.append(source)
    # A refused source is said above, once; the evidence rule is judged on what remains.
    refused = len(sources) < len(dict.fromkeys(source_ids))
    evidence = any(s.kind in EVIDENCE_KINDS for s in sources)
    if kind != MemoryKind.PREFERENCE and not refused and not evidence:
        errors.add("sources", f"{kind} needs a business_record or approval_record source")
    return sources


def find_reviewers(tenant: Tenant, kind: str, usernames: Sequence[str], errors: Errors) -> None:
    if usernames and kind != MemoryKind.ENTERPRISE_RULE:
        errors.add("required_reviewers", "only an enterprise_rule names required reviewers")
        return
    known = set(
        get_user_model()
        .objects.filter(username__in=usernames, membership__tenant=tenant)
        .values_list("username", flat=True)
    )
    for name in usernames:
        if name not in known:
            errors.add("required_reviewers", f"no user {name!r} in this tenant")


def verification_on_approval(version: MemoryVersion) -> str:
    """Approval confirms a claim; approval backed by a business record verifies it."""
    has_record = version.sources.filter(kind=Source.Kind.BUSINESS_RECORD).exists()
    return Verification.VERIFIED_RECORD if has_record else Verification.CONFIRMED
