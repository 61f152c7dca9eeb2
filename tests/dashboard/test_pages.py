"""Every dashboard page renders for a reviewer of the demo tenant, as after ``make run``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils.html import escape

from accounts.grants import permission_grant
from approvals.revalidation import revalidation_start
from approvals.services import version_approve
from memory.erasure import erasure_start
from memory.models import Entity
from memory.proposals import memory_correct, memory_propose
from tests.conftest import later
from tests.dashboard.support import DEMO_PASSWORD, Demo

DASHBOARD_TEMPLATES = Path(settings.BASE_DIR) / "templates" / "dashboard"
ADMIN_ONLY = {"dashboard/admin_reason.html"}  # rendered by tests/dashboard/test_admin.py


def _templates(response: Any) -> set[str]:
    return {t.name for t in response.templates if t.name}


def test_signing_in_as_rita_shows_the_demo_queue(demo: Demo) -> None:
    """``make run`` then a login: the queue lists the three demo proposals."""
    client = Client()
    login = client.get("/accounts/login/")
    assert login.status_code == 200
    assert "registration/login.html" in _templates(login)

    response = client.post(
        "/accounts/login/",
        {"username": "rita", "password": DEMO_PASSWORD.format("rita"), "next": "/"},
        follow=True,
    )

    assert response.redirect_chain == [("/", 302)]
    body = response.content.decode()
    assert "Order order-a goes to Dana&#x27;s office." in body
    assert "Renewals of project P-9 with S-17, batch B-3, follow exception APR-2291." in body
    assert "Supplier material checks are required." in body


def test_a_wrong_password_is_refused_on_the_login_page(demo: Demo) -> None:
    response = Client().post("/accounts/login/", {"username": "rita", "password": "nope"})

    assert response.status_code == 200
    assert "That username and password do not match." in response.content.decode()


def test_anonymous_visitors_are_sent_to_the_login_page(demo: Demo) -> None:
    item = demo.items["order_a"]
    for path in ["/", f"/memories/{item}/", "/browse/", "/audit/", "/policy/", "/overview/"]:
        response = Client().get(path)
        assert response.status_code == 302, path
        assert response["Location"] == f"/accounts/login/?next={path}"


def test_a_person_outside_every_tenant_gets_a_403_page(demo: Demo) -> None:
    root = User.objects.create_user("root", password="root-pass-123", is_staff=True)
    client = Client()
    client.force_login(root)

    response = client.get("/")

    assert response.status_code == 403
    assert "not a member of any tenant" in response.content.decode()


def test_every_dashboard_template_renders_for_rita_with_the_demo_data(demo: Demo) -> None:
    client = demo.client("rita")
    job = revalidation_start(tenant=demo.tenant, reason="model changed", actor="user:rita")
    rita = User.objects.get(username="rita")
    permission_grant(tenant=demo.tenant, user=rita, codename="manage_webhooks")
    pages = {
        "/": "Your review queue",
        "/mine/": "Your memories",
        "/queue/rows/": "Order order-a goes to Dana",
        "/browse/": "Sarah moved to Pune in March.",
        "/browse/?kind=enterprise_rule&status=pending_review&scope=project%3DP-9": "P-9",
        f"/browse/?tt_subject={demo.item('order_a').subject_id}&tt_context=task%3Dorder-a": (
            "Dana normally wants deliveries at home."
        ),
        "/entities/": "Northwind Metals",
        "/audit/": "tenant.created",
        "/policy/": "Criteria, in the order they decide",
        f"/policy/revalidations/{job.pk}/": "model changed",
        "/overview/": "Pending review by age",
        "/webhooks/": "No webhook endpoint yet.",
        "/fields/": "Field catalog",
        "/?kind=task_fact&sort=expiry": "Order order-a goes to Dana",
    }
    # A proposal held on a value question, so the queue's open questions render too.
    order = demo.item("order_a")
    memory_propose(
        principal=demo.agent(),
        data={
            "kind": "task_fact",
            "subject": str(order.subject_id),
            "field": "delivery_address",
            "value": "there",
            "statement": "Order order-b goes where the customer said.",
            "scope": {"task": "order-b"},
            "owner": "sam",
            "expires_at": later(7),
            "sources": order.versions.get(number=1).source_ids,
        },
    )
    pages.update({f"/memories/{memory_id}/": "Evidence" for memory_id in demo.items.values()})
    pages[f"/memories/{demo.items['order_a']}/live/"] = "6 of 6 passed"
    # A subject's page, and an erasure still running (its run is left in the outbox).
    subject = demo.item("order_a").subject_id
    pages[f"/entities/{subject}/"] = "What is held"
    permission_grant(tenant=demo.tenant, user=demo.users["rita"], codename="erase_subject")
    erased = Entity.objects.create(
        tenant=demo.tenant, kind="customer", name="Gone", name_normalized="gone"
    )
    erasure = erasure_start(principal=demo.principal("rita"), subject_id=erased.pk, reason="test")
    pages[f"/entities/{erased.pk}/"] = "running"
    pages[f"/erasures/{erasure.pk}/"] = erasure.pk
    rendered: set[str] = set()

    for path, text in pages.items():
        response = client.get(path)
        assert response.status_code == 200, path
        assert text in response.content.decode(), path
        rendered |= _templates(response)
    verify = client.post("/audit/verify/", HTTP_HX_REQUEST="true")
    assert verify.status_code == 200
    rendered |= _templates(verify)
    # Someone of no tenant is told so (with a way out), not sent round a login loop.
    stranger = User.objects.create_user("stranger", password="x")
    outside = Client()
    outside.force_login(stranger)
    no_tenant = outside.get("/")
    assert no_tenant.status_code == 403
    rendered |= _templates(no_tenant)

    on_disk = {f"dashboard/{p.name}" for p in DASHBOARD_TEMPLATES.glob("*.html")}
    missing = on_disk - ADMIN_ONLY - rendered - {"dashboard/error.html"}
    assert missing == set()


def test_an_unknown_memory_is_a_404_page_not_a_500(demo: Demo) -> None:
    response = demo.client("rita").get("/memories/mem_does_not_exist/")

    assert response.status_code == 404
    assert "dashboard/error.html" in _templates(response)
    assert "No memory mem_does_not_exist." in response.content.decode()


def test_a_polled_fragment_after_the_session_ended_sends_the_page_to_the_login(
    demo: Demo,
) -> None:
    response = Client().get(
        "/queue/rows/", HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL="http://testserver/"
    )

    assert response.status_code == 200
    assert response["HX-Redirect"] == "/accounts/login/?next=%2F"
    assert response.content == b""


def test_a_correction_shows_what_changed_and_both_versions_on_the_timeline(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    """Seed 002: "actually, use the Pier Street warehouse" is a new version, not a rival."""
    with django_capture_on_commit_callbacks(execute=True):
        version_approve(principal=demo.principal("rita"), item=demo.item("order_a"), comment="")
    with django_capture_on_commit_callbacks(execute=True):
        memory_correct(
            principal=demo.agent(),
            item=demo.item("order_a"),
            if_match='"1"',
            data={"value": "9 Pier Street", "statement": "Order order-a goes to Pier Street."},
        )

    page = demo.client("rita").get(f"/memories/{demo.items['order_a']}/").content.decode()

    assert "Changes from version 1" in page
    assert "<del>4 Dock Road</del>" in page and "<ins>9 Pier Street</ins>" in page
    assert "<del>Dana&#x27;s office.</del>" in page and "<ins>Pier Street.</ins>" in page
    assert 'Approvals <span class="muted">0 of 1 given</span>' in page
    assert "version 1 is in use until this one is active" in page
    assert '<text x="4" y="20" class="tl-label">v1</text>' in page
    assert '<text x="4" y="66" class="tl-label">v2</text>' in page
    assert 'class="tl-in-use"' in page  # v1 has been in use since its activation
    # The history keeps each step as before -> after, changed fields only (issue 37, 10).
    history = page[page.index('id="changes-h"') :]
    assert "Version 1 → version 2: 2 changes" in history
    assert '<th scope="row">value</th><td><del>4 Dock Road</del></td>' in history
    assert '<th scope="row">owner</th>' not in history


def test_sam_sees_no_audit_link_he_could_not_use_and_rita_does(demo: Demo) -> None:
    sam = demo.client("sam").get("/").content.decode()
    rita = demo.client("rita").get("/").content.decode()

    assert 'href="/audit/"' not in sam
    assert 'href="/audit/"' in rita


def test_an_error_page_keeps_the_tenant_name_in_the_header(demo: Demo) -> None:
    response = demo.client("omar").get("/memories/mem_00000000000000000000000000/")
    missing = demo.client("omar").get("/no-such-page/")

    assert response.status_code == 404 and missing.status_code == 404
    for page in (response, missing):
        assert f'<span class="tenant">{escape(demo.tenant.name)}</span>' in page.content.decode()


def test_the_policy_page_names_the_time_zone_and_times_follow_it(demo: Demo) -> None:
    call_command("create_tenant", demo.tenant.slug, "--update", "--time-zone", "Asia/Kolkata")

    page = demo.client("rita").get("/policy/").content.decode()

    assert "Times are shown in <strong>Asia/Kolkata</strong>" in page
    assert " IST by " in page  # "Published 2026-… 07:33 IST by operator"
