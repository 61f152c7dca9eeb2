"""The subject's page on the dashboard (issue 12): a privacy officer exports and erases
(typed confirmation and a reason) and follows the erasure; a reviewer without the
permission sees neither button and is refused; the policy page shows the retention."""

from __future__ import annotations

import json

from django.test import Client

from core.models import Tenant
from memory.models import Entity, Erasure
from tests.approvals.support import Flow


def signed_in(flow: Flow, name: str) -> Client:
    client = Client()
    client.force_login(flow.world.users[name])
    return client


def test_a_privacy_officer_exports_and_erases_a_subject_from_its_page(flow: Flow):
    subject = flow.subject("Ottoline Quillfeather", kind="customer")
    officer = signed_in(flow, "erin")

    page = officer.get(f"/entities/{subject}/")
    assert page.status_code == 200
    assert b"Export" in page.content and b"Erase" in page.content
    export = officer.get(f"/entities/{subject}/export/")
    chunks = export.streaming_content  # type: ignore[attr-defined]
    assert json.loads(b"".join(chunks))["entity"]["id"] == subject

    with flow._committed():
        wrong = officer.post(f"/entities/{subject}/erase/", {"confirm": "yes", "reason": "Art. 17"})
    assert wrong.status_code == 422
    assert Entity.objects.get(pk=subject).erased_at is None

    with flow._committed():
        done = officer.post(
            f"/entities/{subject}/erase/", {"confirm": subject, "reason": "Art. 17"}
        )
    assert done.status_code == 302
    job = Erasure.objects.get(subject_id=subject)
    assert job.status == "done"
    progress = officer.get(f"/erasures/{job.pk}/")
    assert progress.status_code == 200
    assert job.pk.encode() in progress.content and b"done" in progress.content
    assert b"[erased]" in officer.get(f"/entities/{subject}/").content


def test_a_reviewer_without_erase_subject_sees_no_erase_button_and_is_refused(flow: Flow):
    subject = flow.subject("Ottoline Quillfeather", kind="customer")
    reviewer = signed_in(flow, "lena")

    page = reviewer.get(f"/entities/{subject}/")
    assert page.status_code == 200
    assert b"Erase" not in page.content and b"Export" not in page.content
    refused = reviewer.post(f"/entities/{subject}/erase/", {"confirm": subject, "reason": "x"})
    assert refused.status_code == 403
    assert reviewer.get(f"/entities/{subject}/export/").status_code == 403
    assert Entity.objects.get(pk=subject).erased_at is None


def test_the_policy_page_shows_the_retention_settings(flow: Flow):
    Tenant.objects.filter(pk=flow.world.tenant.pk).update(source_content_days=30)
    page = signed_in(flow, "rita").get("/policy/")
    assert page.status_code == 200
    assert b"Retention" in page.content and b"30 days" in page.content
