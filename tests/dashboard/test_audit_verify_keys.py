"""The dashboard's audit check tells a rewritten chain from one it lacks a key for
(issue 42, point 8; docs/decisions/0019)."""

from __future__ import annotations

from django.db import transaction
from django.test import override_settings

from audit.models import AuditEvent
from audit.services import audit_append
from tests.api.support import tamper
from tests.dashboard.support import Demo

KID1 = "kid1:" + "1" * 40


def _append(demo: Demo) -> AuditEvent:
    with transaction.atomic():
        return audit_append(
            tenant=demo.tenant, actor="user:rita", action="test.appended",
            target_type="test", target_id="1",
        )  # fmt: skip


def test_the_dashboard_says_a_missing_key_is_not_tampering(demo: Demo) -> None:
    with override_settings(MEMGOV_AUDIT_KEYS=KID1):
        _append(demo)

    verdict = demo.client("rita").post("/audit/verify/").content.decode()

    assert "cannot be verified: the audit key kid1 is not configured" in verdict
    assert "broken" not in verdict


def test_the_dashboard_names_an_actor_rewritten_behind_its_back(demo: Demo) -> None:
    event = _append(demo)
    tamper("UPDATE audit_auditevent SET actor = 'user:mallory' WHERE id = %s", [event.pk])

    verdict = demo.client("rita").post("/audit/verify/").content.decode()

    assert f"The chain is broken at event #{event.seq}" in verdict
