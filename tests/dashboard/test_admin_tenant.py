"""The tenant's own admin: rita (``tenant_admin``, staff) reads her tenant's rows in the
Django admin and nothing of Globex's — no rows, no filters naming it, no infrastructure
tables, no account editing; a superuser who is no member picks a tenant instead of a
"No tenant" page that links to itself."""

from __future__ import annotations

from io import StringIO
from typing import Any

from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from core.principals import Principal
from memory import entities
from tests.dashboard.support import DEMO_PASSWORD, Demo, outsider


def _signed_in(name: str) -> Client:
    client = Client()
    assert client.login(username=name, password=DEMO_PASSWORD.format(name))
    return client


def test_rita_reads_her_tenants_versions_and_people_and_none_of_globex(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    zed = outsider(django_capture_on_commit_callbacks)
    globex = zed.membership.tenant
    secret = entities.entity_create(
        principal=Principal(tenant=globex, name="agent:globex", labels=frozenset({"staff"})),
        kind="customer",
        name="Globex Secret Customer",
    )
    rita = _signed_in("rita")

    versions = rita.get(reverse("admin:memory_memoryversion_changelist"))
    people = rita.get(reverse("admin:auth_user_changelist"))
    tenants = rita.get(reverse("admin:core_tenant_changelist"))
    found = rita.get(reverse("admin:memory_entity_changelist"))

    assert versions.status_code == 200
    page = versions.content.decode()
    assert "Renewals of project P-9 with S-17" in page
    assert "Globex" not in page and "globex" not in page  # not even as a filter choice
    assert "zed" not in people.content.decode() and "sam" in people.content.decode()
    assert "Globex" not in tenants.content.decode()
    assert "Globex Secret Customer" not in found.content.decode()
    assert "Dana Kim" in found.content.decode()
    # Globex's rows cannot be opened by address either.
    detail = rita.get(reverse("admin:memory_entity_change", args=[secret.pk]))
    assert detail.status_code in (302, 403, 404)
    assert "Globex Secret Customer" not in detail.content.decode()


def test_rita_has_no_superuser_powers_in_the_admin(demo: Demo) -> None:
    rita = _signed_in("rita")
    sam = demo.users["sam"]

    assert rita.get(reverse("admin:core_outbox_changelist")).status_code == 403
    assert rita.get(reverse("admin:auth_user_add")).status_code == 403
    edit = rita.post(
        reverse("admin:auth_user_change", args=[sam.pk]),
        {"username": "sam", "is_superuser": "on", "is_staff": "on"},
    )
    assert edit.status_code == 403
    sam.refresh_from_db()
    assert not sam.is_superuser and not sam.is_staff
    password = rita.get(reverse("admin:auth_user_password_change", args=[sam.pk]))
    assert password.status_code == 403


def test_a_reviewer_without_staff_is_sent_to_the_admin_login(demo: Demo) -> None:
    response = _signed_in("lena").get(reverse("admin:index"))

    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_create_user_staff_makes_a_tenant_admin_and_prints_the_admin_login(demo: Demo) -> None:
    out = StringIO()
    call_command(
        "create_user",
        "tess",
        "--tenant",
        demo.tenant.slug,
        "--password",
        "tess-pass-123",
        "--staff",
        stdout=out,
    )

    assert "Admin login: http://127.0.0.1:8000/admin/ as tess" in out.getvalue()
    client = Client()
    assert client.login(username="tess", password="tess-pass-123")
    assert client.get(reverse("admin:memory_memoryitem_changelist")).status_code == 200


def test_a_superuser_without_a_tenant_picks_one_instead_of_a_looping_link(demo: Demo) -> None:
    User.objects.create_superuser("root", "root@example.com", "root-pass-123")
    client = Client()
    assert client.login(username="root", password="root-pass-123")

    response = client.get("/")

    assert response.status_code == 403
    page = response.content.decode()
    assert "Pick a tenant" in page
    assert demo.tenant.name.replace("&", "&amp;") in page
    assert f"?tenant__id__exact={demo.tenant.pk}" in page
    assert 'href="/"' not in page.split("<main", 1)[1]  # no link back to itself


def test_ritas_people_filter_offers_her_tenants_groups_and_none_of_globex(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    zed = outsider(django_capture_on_commit_callbacks)
    Group.objects.create(name="globex-night-shift").user_set.add(zed)
    Group.objects.create(name="demo-reviewers").user_set.add(demo.users["sam"])
    Group.objects.create(name="nobodys-group")

    page = _signed_in("rita").get(reverse("admin:auth_user_changelist")).content.decode()

    assert "demo-reviewers" in page
    assert "globex-night-shift" not in page and "nobodys-group" not in page
    root = User.objects.create_superuser("root", "root@example.com", "root-pass-123")
    client = Client()
    client.force_login(root)
    everything = client.get(reverse("admin:auth_user_changelist")).content.decode()
    assert "globex-night-shift" in everything and "demo-reviewers" in everything
