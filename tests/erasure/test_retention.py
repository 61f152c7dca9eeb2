"""Retention (issue 12): a tenant keeps source content and retrieval records only as long
as its settings say, unless an active or pending version cites the source; each run is
audited once with its counts."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from approvals import tasks
from audit.models import AuditEvent
from audit.selectors import audit_verify
from core.models import Tenant
from memory.models import MemoryVersion, RetrievalRecord, Source
from tests.approvals.support import Flow
from tests.erasure.story import P9, preference


def test_set_retention_sets_each_setting_and_is_audited(flow: Flow):
    out = StringIO()
    call_command(
        "set_retention",
        "--tenant",
        "acme",
        "--source-content-days",
        "0",
        "--retrieval-days",
        "30",
        stdout=out,
    )

    tenant = Tenant.objects.get(slug="acme")
    assert (tenant.source_content_days, tenant.retrieval_days, tenant.inactive_version_days) == (
        0,
        30,
        None,
    )
    assert "inactive_version_days: never" in out.getvalue()
    [event] = AuditEvent.objects.filter(action="tenant.retention_changed")
    assert event.data["retrieval_days"] == {"from": None, "to": 30}
    with pytest.raises(CommandError):
        call_command("set_retention", "--tenant", "acme", "--retrieval-days", "-3")
    with pytest.raises(CommandError):
        call_command("set_retention", "--tenant", "nowhere", "--retrieval-days", "3")


def test_with_zero_days_uncited_content_is_purged_and_content_an_active_version_cites_is_kept(
    flow: Flow,
):
    subject = flow.subject("Harbor Logistics", kind="supplier")
    cited = flow.source("message", content="Call on Tuesdays, said Harbor.")
    loose = flow.source("message", content="An unrelated chat nobody relies on.")
    retired_only = flow.source("message", content="Old instruction, withdrawn.")
    active = preference(flow, subject, cited, field="call_day")
    withdrawn = preference(flow, subject, retired_only, field="old_note")
    flow.ok(flow.retire(withdrawn))
    assert flow.memory(active)["status"] == "active"
    flow.ok(flow.post("agent", "/resolve", {"subject": subject, "context": P9, "task_id": "t-1"}))
    RetrievalRecord.objects.update(retrieved_at=timezone.now() - timedelta(days=40))
    call_command(
        "set_retention",
        "--tenant",
        "acme",
        "--source-content-days",
        "0",
        "--retrieval-days",
        "30",
        "--inactive-version-days",
        "0",
        stdout=StringIO(),
    )

    counts = tasks.apply_retention()

    assert counts["acme"] == {"sources_purged": 2, "retrieval_records": 1, "versions_purged": 1}
    assert Source.objects.get(pk=cited).content == "Call on Tuesdays, said Harbor."
    assert Source.objects.get(pk=loose).content is None
    assert Source.objects.get(pk=retired_only).content is None
    assert Source.objects.get(pk=loose).content_sha256
    assert not RetrievalRecord.objects.exists()
    purged = MemoryVersion.objects.get(item_id=withdrawn)
    assert (purged.value, purged.statement, purged.erased_at is not None) == (None, "", True)
    assert MemoryVersion.objects.get(item_id=active).value == "leave at reception"
    [run] = AuditEvent.objects.filter(action="retention.purged", tenant__slug="acme")
    assert run.data["counts"] == counts["acme"]
    assert audit_verify(tenant=flow.world.tenant).ok
    # A source read after the purge says so (null content, the digest kept).
    body = flow.ok(flow.get("rita", f"/sources/{loose}"))
    assert body["content"] is None

    # The next run finds nothing more to do, and says so once.
    assert tasks.apply_retention()["acme"] == {
        "sources_purged": 0,
        "retrieval_records": 0,
        "versions_purged": 0,
    }
    assert AuditEvent.objects.filter(action="retention.purged").count() == 2


def test_a_corrected_version_out_of_use_is_purged_and_the_one_in_use_kept(flow: Flow):
    subject = flow.subject("Harbor Logistics", kind="supplier")
    said = flow.source("message", content="Deliver to the side gate now, said Harbor.")
    first = preference(flow, subject, said, field="gate", value="front gate")
    corrected = flow.correct(
        first, 1, value="side gate", statement="Deliveries go to the side gate.", sources=[said]
    )
    assert corrected["version"] == 2
    assert flow.memory(first)["status"] == "active"
    call_command("set_retention", "--tenant", "acme", "--inactive-version-days", "0")

    counts = tasks.apply_retention()

    assert counts["acme"]["versions_purged"] == 1
    old, current = MemoryVersion.objects.filter(item_id=first).order_by("number")
    assert (old.status, old.value, old.statement) == ("superseded", None, "")
    assert (current.status, current.value) == ("active", "side gate")


def test_a_purged_version_keeps_no_reason_that_quoted_its_value(flow: Flow):
    """A status reason may quote the value ("value clarified: …", a retirement's words):
    purging the value purges that copy of it too."""
    subject = flow.subject("Harbor Logistics", kind="supplier")
    said = flow.source("message", content="Use the north dock, said Harbor.")
    withdrawn = preference(flow, subject, said, field="dock", value="north dock")
    flow.ok(flow.retire(withdrawn))
    # As a clarified version's reason reads (approvals.services._clarified_reason).
    MemoryVersion.objects.filter(item_id=withdrawn).update(
        status_reason="value clarified: “north dock”"
    )
    call_command("set_retention", "--tenant", "acme", "--inactive-version-days", "0")

    tasks.apply_retention()

    purged = MemoryVersion.objects.get(item_id=withdrawn)
    assert (purged.value, purged.status_reason) == (None, "")


def test_a_tenant_without_retention_settings_keeps_everything(flow: Flow):
    flow.source("message", content="kept forever")
    assert tasks.apply_retention() == {}
    assert Source.objects.filter(content="kept forever").exists()
