"""The Django admin shows every model, edits none of the governed ones, and changes status
only through actions that call the services as the admin user."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from approvals.services import version_approve
from memory.models import MemoryVersion, Source
from tests.dashboard.support import Demo

IMMUTABLE = [
    ("memory", "source"),
    ("memory", "memoryversion"),
    ("memory", "memoryitem"),
    ("audit", "auditevent"),
    ("approvals", "approval"),
    ("approvals", "checkresult"),
    ("memory", "policy"),
]


def _admin(demo: Demo, name: str) -> Client:
    user = demo.users[name]
    User.objects.filter(pk=user.pk).update(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(user)
    return client


def _changelist(model: str) -> str:
    app, name = model.split(".")
    return reverse(f"admin:{app}_{name}_changelist")


def _messages(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def test_every_model_of_memgov_is_in_the_admin() -> None:
    models = [
        m
        for label in ("memory", "approvals", "audit")
        for m in apps.get_app_config(label).get_models()
    ]

    assert [m.__name__ for m in models if not admin.site.is_registered(m)] == []


def test_every_changelist_and_change_page_renders(demo: Demo) -> None:
    client = _admin(demo, "rita")

    for model in (
        m
        for label in ("memory", "approvals", "audit")
        for m in apps.get_app_config(label).get_models()
    ):
        meta = model._meta
        listing = client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        assert listing.status_code == 200, meta.label
        first = model._default_manager.first()
        if first is not None:
            page = client.get(
                reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[first.pk])
            )
            assert page.status_code == 200, meta.label


def test_immutable_data_is_read_only_in_the_admin(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        version_approve(principal=demo.principal("rita"), item=demo.item("order_a"), comment="")
    client = _admin(demo, "rita")

    for app, model in IMMUTABLE:
        row = apps.get_model(app, model)._default_manager.first()
        url = reverse(f"admin:{app}_{model}_change", args=[row.pk])
        page = client.get(url)
        edit = client.post(url, {})
        delete = client.post(reverse(f"admin:{app}_{model}_delete", args=[row.pk]), {"post": "yes"})
        add = client.get(reverse(f"admin:{app}_{model}_add"))

        assert page.status_code == 200, model
        assert 'name="_save"' not in page.content.decode(), model
        assert (edit.status_code, delete.status_code, add.status_code) == (403, 403, 403), model


def test_approve_selected_calls_the_service_as_the_admin_user(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    version = MemoryVersion.objects.get(item_id=demo.items["order_a"])

    with django_capture_on_commit_callbacks(execute=True):
        response = _admin(demo, "rita").post(
            _changelist("memory.memoryversion"),
            {"action": "approve_selected", "_selected_action": [version.pk]},
            follow=True,
        )

    version.refresh_from_db()
    assert version.status == "active"
    assert version.approvals.get().reviewer.username == "rita"
    assert _messages(response) == [f"{version}: approved; now checking"]


def test_an_admin_action_the_service_refuses_becomes_an_error_message(demo: Demo) -> None:
    """lena has no task-fact authority; being a superuser grants none either."""
    version = MemoryVersion.objects.get(item_id=demo.items["order_a"])

    response = _admin(demo, "lena").post(
        _changelist("memory.memoryversion"),
        {"action": "approve_selected", "_selected_action": [version.pk]},
        follow=True,
    )

    assert response.status_code == 200
    assert _messages(response) == [
        f"{version}: You have no authority to approve a task_fact with this scope."
    ]
    version.refresh_from_db()
    assert version.status == "pending_review"


def test_an_admin_outside_every_tenant_cannot_act(demo: Demo) -> None:
    root = User.objects.create_superuser("root", password="root-pass-123")
    client = Client()
    client.force_login(root)
    version = MemoryVersion.objects.get(item_id=demo.items["order_a"])

    response = client.post(
        _changelist("memory.memoryversion"),
        {"action": "approve_selected", "_selected_action": [version.pk]},
        follow=True,
    )

    assert "is not a member of a tenant" in _messages(response)[0]
    version.refresh_from_db()
    assert version.status == "pending_review"


def test_retire_selected_asks_why_then_retires(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    client = _admin(demo, "rita")
    memory_id = demo.items["dana_home"]
    action = {"action": "retire_selected", "_selected_action": [memory_id]}

    asked = client.post(_changelist("memory.memoryitem"), action)
    with django_capture_on_commit_callbacks(execute=True):
        done = client.post(
            _changelist("memory.memoryitem"),
            {**action, "apply": "Retire memories", "reason": "Dana moved"},
            follow=True,
        )

    assert "dashboard/admin_reason.html" in [t.name for t in asked.templates]
    assert memory_id in asked.content.decode()
    version = MemoryVersion.objects.get(item_id=memory_id)
    assert (version.status, version.status_reason) == ("retired", "Dana moved")
    assert _messages(done) == [f"{memory_id}: retired; 0 task(s) flagged"]


def test_revoke_selected_sources_retires_what_rests_on_them(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    client = _admin(demo, "rita")
    source = MemoryVersion.objects.get(item_id=demo.items["order_a"]).source_ids[0]

    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            _changelist("memory.source"),
            {
                "action": "revoke_selected",
                "_selected_action": [source],
                "apply": "Revoke sources",
                "reason": "ORD-A cancelled",
            },
        )

    assert Source.objects.get(pk=source).revoked_reason == "ORD-A cancelled"
    assert MemoryVersion.objects.get(item_id=demo.items["order_a"]).status == "retired"
