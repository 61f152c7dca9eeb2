"""People are deactivated and reactivated in the Django admin through the audited
services, never by ticking ``is_active`` on the form."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from tests.dashboard.support import Demo

CHANGELIST = reverse("admin:auth_user_changelist")


def _admin(demo: Demo, name: str) -> Client:
    user = demo.users[name]
    User.objects.filter(pk=user.pk).update(is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(user)
    return client


def test_the_admin_deactivates_a_reviewer_who_is_then_logged_out(demo: Demo) -> None:
    admin = _admin(demo, "rita")
    omar = demo.client("omar")
    assert omar.get("/").status_code == 200

    response = admin.post(
        CHANGELIST, {"action": "deactivate_selected", "_selected_action": [demo.users["omar"].pk]}
    )

    assert response.status_code == 302
    assert User.objects.get(username="omar").is_active is False
    assert omar.get("/").status_code == 302  # to the login page
    event = AuditEvent.objects.get(action="user.deactivated")
    assert (event.actor, event.target_id) == ("user:rita", "omar")


def test_the_admin_reactivates_and_the_reviewer_is_back(demo: Demo) -> None:
    admin = _admin(demo, "rita")
    selected = {"_selected_action": [demo.users["omar"].pk]}
    admin.post(CHANGELIST, {"action": "deactivate_selected", **selected})

    admin.post(CHANGELIST, {"action": "reactivate_selected", **selected})

    assert User.objects.get(username="omar").is_active is True
    assert demo.client("omar").get("/").status_code == 200
    actions = AuditEvent.objects.filter(target_id="omar", action__startswith="user.")
    assert list(actions.values_list("action", flat=True)) == [
        "user.created",
        "user.deactivated",
        "user.reactivated",
    ]


def test_an_admin_cannot_deactivate_themselves(demo: Demo) -> None:
    admin = _admin(demo, "rita")

    response = admin.post(
        CHANGELIST,
        {"action": "deactivate_selected", "_selected_action": [demo.users["rita"].pk]},
        follow=True,
    )

    assert User.objects.get(username="rita").is_active is True
    assert "rita: you cannot change yourself" in [str(m) for m in response.context["messages"]]
    assert not AuditEvent.objects.filter(action="user.deactivated").exists()


def test_the_user_form_does_not_edit_is_active(demo: Demo) -> None:
    admin = _admin(demo, "rita")
    page = admin.get(reverse("admin:auth_user_change", args=[demo.users["omar"].pk]))

    assert page.status_code == 200
    assert 'name="is_active"' not in page.content.decode()


def test_the_api_key_list_shows_last_use_and_expiry(demo: Demo) -> None:
    page = _admin(demo, "rita").get(reverse("admin:core_apikey_changelist"))

    body = page.content.decode()
    assert "Last used at" in body
    assert "Expires at" in body
