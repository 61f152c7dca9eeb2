"""Recording sources: what was actually said or recorded (docs/design.md, the three layers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from audit.chain import digest
from audit.services import audit_append
from core.principals import Principal
from memory import rules
from memory.models import Source


def source_record(*, principal: Principal, data: Mapping[str, Any]) -> Source:
    content = data["content"]
    errors = rules.Errors()
    rules.check_labels(principal.tenant, data.get("visibility") or [], errors)
    errors.raise_if_any()
    with transaction.atomic(durable=True):
        source = Source.objects.create(
            tenant=principal.tenant,
            kind=data["kind"],
            content=content,
            content_sha256=digest(content),
            external_ref=data.get("external_ref") or "",
            version=data.get("version") or "",
            speaker=data.get("speaker") or "",
            occurred_at=data.get("occurred_at"),
            visibility=list(data.get("visibility") or ["*"]),
            metadata=data.get("metadata") or {},
            recorded_by=principal.name,
        )
        audit_append(
            tenant=principal.tenant,
            actor=principal.name,
            action="source.recorded",
            target_type="source",
            target_id=source.pk,
            data={"kind": source.kind, "content_sha256": source.content_sha256},
        )
    return source
