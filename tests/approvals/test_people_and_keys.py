"""Deactivated people lose every power on their next request (docs/design.md, Permissions):
their personal key and their dashboard session are refused, they never count as a
reviewer and get no email; reactivation gives it all back. Keys expire, rotate, and a
personal key carries its person's current labels."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core import mail
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import people
from approvals.models import Approval
from audit.models import AuditEvent
from core.models import ApiKey
from tests.api.support import assert_problem
from tests.approvals.support import Flow, head


def recipients() -> list[str]:
    return sorted(address for message in mail.outbox for address in message.to)


def _bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def _dashboard(flow: Flow, name: str) -> Client:
    client = Client()
    client.force_login(flow.world.users[name])
    return client


def _prefix(raw: str) -> str:
    return raw.split("_")[1]


def test_deactivated_reviewer_key_and_session_are_refused_on_the_next_request(flow: Flow):
    memory = flow.rule({"project": "P-9"})
    session = _dashboard(flow, "omar")
    assert flow.get("omar", f"/memories/{memory['id']}").status_code == 200
    assert session.get("/").status_code == 200

    people.user_deactivate(user=flow.world.users["omar"])

    assert_problem(flow.get("omar", f"/memories/{memory['id']}"), 401)
    body = {"comment": "looks fine"}
    assert_problem(flow.post("omar", f"/memories/{memory['id']}/approve", body), 401)
    page = session.get("/")
    assert page.status_code == 302
    assert page["Location"].startswith("/accounts/login/")
    assert_problem(session.get(f"/api/v1/memories/{memory['id']}"), 401)
    assert Approval.objects.filter(version=head(memory["id"])).count() == 0


def test_a_deactivated_reviewer_is_never_emailed_and_reactivation_restores_everything(
    flow: Flow,
):
    people.user_deactivate(user=flow.world.users["omar"])
    mail.outbox.clear()

    memory = flow.rule({"project": "P-9"})

    assert recipients() == ["lena@example.com", "rita@example.com"]

    people.user_reactivate(user=flow.world.users["omar"])
    mail.outbox.clear()
    second = flow.rule({"project": "P-9", "task": "renewal-4"})

    # Back in office, omar hears of the new item and of the one he missed while away, in
    # one email (one per event per person: a digest naming both).
    [omar] = [m for m in mail.outbox if m.to == ["omar@example.com"]]
    assert sorted(recipients()) == ["lena@example.com", "omar@example.com", "rita@example.com"]
    assert omar.subject == "[Memgov] 2 memories wait for your review"
    assert memory["id"] in omar.body and second["id"] in omar.body
    approved = flow.ok(flow.post("omar", f"/memories/{memory['id']}/approve", {"comment": "ok"}))
    assert approved["status"] == "pending_review"
    assert _dashboard(flow, "omar").get("/").status_code == 200


def test_a_deactivated_owner_is_not_told_that_checks_failed(flow: Flow):
    too_broad = {"kind": "inapplicable", "context": {"project": "P-9"}, "expect": "does_not_apply"}
    memory = flow.rule({"project": "P-9"}, scenarios=[too_broad], owner="omar")
    people.user_deactivate(user=flow.world.users["omar"])
    mail.outbox.clear()

    flow.approve(memory["id"], "rita", "lena")

    assert head(memory["id"]).status == "checks_failed"
    assert not [m for m in mail.outbox if "omar@example.com" in m.to]


def test_deactivate_and_reactivate_commands_are_audited(flow: Flow):
    out = StringIO()
    call_command("deactivate_user", "omar", tenant="acme", stdout=out)
    omar = flow.world.users["omar"]
    omar.refresh_from_db()
    assert out.getvalue().strip() == "deactivated omar in acme"
    assert omar.is_active is False
    assert_problem(flow.get("omar", "/memories"), 401)

    call_command("reactivate_user", "omar", tenant="acme", stdout=StringIO())

    assert flow.get("omar", "/memories").status_code == 200
    events = AuditEvent.objects.filter(target_type="user", target_id="omar")
    assert list(events.filter(action__startswith="user.").values_list("action", flat=True)) == [
        "user.created",
        "user.deactivated",
        "user.reactivated",
    ]


def test_deactivating_a_person_of_another_tenant_or_nobody_is_a_command_error(flow: Flow):
    with pytest.raises(CommandError, match="no user 'zed' in tenant acme"):
        call_command("deactivate_user", "zed", tenant="acme", stdout=StringIO())
    with pytest.raises(CommandError, match="no tenant 'nowhere'"):
        call_command("reactivate_user", "omar", tenant="nowhere", stdout=StringIO())

    flow.world.users["zed"].refresh_from_db()
    assert flow.world.users["zed"].is_active is True


def test_an_expired_key_is_a_401_and_an_unexpired_one_works(flow: Flow):
    out = StringIO()
    call_command("create_api_key", tenant="acme", agent="temp", expires_in="90d", stdout=out)
    raw = out.getvalue().strip().splitlines()[-1]
    key = ApiKey.objects.get(prefix=_prefix(raw))
    assert key.lifetime == timedelta(days=90)
    assert key.expires_at is not None
    assert abs(key.expires_at - (timezone.now() + timedelta(days=90))) < timedelta(minutes=1)
    client = _bearer(raw)
    assert client.get("/api/v1/memories").status_code == 200  # now remembered in-process

    ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(seconds=1))

    assert_problem(client.get("/api/v1/memories"), 401)


def test_an_expired_personal_key_is_a_401(flow: Flow):
    key = ApiKey.objects.get(prefix=_prefix(flow.world.keys["omar"]))
    ApiKey.objects.filter(pk=key.pk).update(expires_at=timezone.now() - timedelta(hours=1))

    assert_problem(flow.get("omar", "/memories"), 401)
    assert flow.get("rita", "/memories").status_code == 200


@pytest.mark.parametrize("bad", ["90", "90x", "d", "0d", "-3d", "1.5h"])
def test_create_api_key_refuses_a_lifetime_it_cannot_read(flow: Flow, bad: str):
    with pytest.raises(CommandError, match="--expires-in"):
        call_command("create_api_key", tenant="acme", agent="temp", expires_in=bad)

    assert not ApiKey.objects.filter(agent_name="temp").exists()


def test_create_api_key_accepts_hours(flow: Flow):
    out = StringIO()
    call_command("create_api_key", tenant="acme", user="nora", expires_in="12h", stdout=out)

    key = ApiKey.objects.get(prefix=_prefix(out.getvalue().strip().splitlines()[-1]))
    assert key.lifetime == timedelta(hours=12)


def test_a_personal_key_takes_no_labels_of_its_own(flow: Flow):
    with pytest.raises(CommandError, match="--labels is for agent keys"):
        call_command("create_api_key", tenant="acme", user="nora", labels="finance")

    assert ApiKey.objects.filter(user=flow.world.users["nora"]).count() == 1


def test_a_rotated_key_stops_working_and_its_successor_works(flow: Flow):
    old_raw = flow.world.keys["agent"]
    old = ApiKey.objects.get(prefix=_prefix(old_raw))
    ApiKey.objects.filter(pk=old.pk).update(lifetime=timedelta(days=30))
    assert _bearer(old_raw).get("/api/v1/memories").status_code == 200

    out = StringIO()
    call_command("rotate_api_key", old.prefix, stdout=out)
    new_raw = out.getvalue().strip().splitlines()[-1]

    assert_problem(_bearer(old_raw).get("/api/v1/memories"), 401)
    assert _bearer(new_raw).get("/api/v1/memories").status_code == 200
    new = ApiKey.objects.get(prefix=_prefix(new_raw))
    assert (new.principal_name, new.labels, new.lifetime) == (
        "agent:bot",
        ["staff"],
        timedelta(days=30),
    )
    assert new.expires_at is not None and new.expires_at > timezone.now() + timedelta(days=29)
    event = AuditEvent.objects.get(action="api_key.rotated")
    assert (event.target_id, event.data["new_key"]) == (old.prefix, new.prefix)


def test_a_revoked_key_cannot_be_rotated(flow: Flow):
    prefix = _prefix(flow.world.keys["agent"])
    call_command("revoke_api_key", prefix, stdout=StringIO())

    with pytest.raises(CommandError, match="is revoked"):
        call_command("rotate_api_key", prefix, stdout=StringIO())

    assert ApiKey.objects.filter(agent_name="bot").count() == 1


def test_last_used_at_is_a_conditional_write_at_most_once_a_minute(
    flow: Flow, django_assert_num_queries
):
    key = ApiKey.objects.get(prefix=_prefix(flow.world.keys["nora"]))
    half_a_minute_ago = timezone.now() - timedelta(seconds=30)
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=half_a_minute_ago)

    flow.get("nora", "/memories")
    key.refresh_from_db()
    assert key.last_used_at == half_a_minute_ago

    ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now() - timedelta(minutes=2))
    flow.get("nora", "/memories")
    key.refresh_from_db()
    assert key.last_used_at is not None
    assert timezone.now() - key.last_used_at < timedelta(seconds=5)


def test_a_key_rotated_with_an_overlap_keeps_working_until_then_beside_its_successor(
    flow: Flow,
):
    old_raw = flow.world.keys["agent"]
    old = ApiKey.objects.get(prefix=_prefix(old_raw))

    out = StringIO()
    call_command("rotate_api_key", old.prefix, "--overlap", "3600", stdout=out)
    new_raw = out.getvalue().strip().splitlines()[-1]

    # Both work meanwhile: the agents move without a failed request.
    assert _bearer(old_raw).get("/api/v1/memories").status_code == 200
    assert _bearer(new_raw).get("/api/v1/memories").status_code == 200
    old.refresh_from_db()
    assert old.revoked_at is None and old.expires_at is not None
    left = old.expires_at - timezone.now()
    assert timedelta(minutes=59) < left <= timedelta(hours=1)
    assert f"{old.prefix} works until " in out.getvalue()
    event = AuditEvent.objects.get(action="api_key.rotated")
    assert event.data["old_valid_until"].startswith(old.expires_at.strftime("%Y-%m-%dT%H:%M"))
    # When the overlap has passed, the old key is refused.
    ApiKey.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert_problem(_bearer(old_raw).get("/api/v1/memories"), 401)
    assert _bearer(new_raw).get("/api/v1/memories").status_code == 200


def test_an_overlap_never_lengthens_a_key_that_expires_sooner(flow: Flow):
    old = ApiKey.objects.get(prefix=_prefix(flow.world.keys["agent"]))
    soon = timezone.now() + timedelta(minutes=5)
    ApiKey.objects.filter(pk=old.pk).update(expires_at=soon)

    call_command("rotate_api_key", old.prefix, "--overlap", "86400", stdout=StringIO())

    old.refresh_from_db()
    assert old.expires_at == soon


def test_a_negative_overlap_is_refused(flow: Flow):
    prefix = _prefix(flow.world.keys["agent"])

    with pytest.raises(CommandError, match="--overlap"):
        call_command("rotate_api_key", prefix, "--overlap", "-5", stdout=StringIO())

    assert ApiKey.objects.filter(agent_name="bot").count() == 1


def test_a_key_is_rotated_or_revoked_by_its_prefix_written_with_or_without_mg(flow: Flow):
    agent = _prefix(flow.world.keys["agent"])
    nora = _prefix(flow.world.keys["nora"])

    out = StringIO()
    call_command("rotate_api_key", f"mg_{agent}", stdout=out)
    call_command("revoke_api_key", f"mg_{nora}", stdout=StringIO())

    assert out.getvalue().startswith(f"revoked {agent}, new key ")
    assert ApiKey.objects.get(prefix=agent).revoked_at is not None
    assert ApiKey.objects.get(prefix=nora).revoked_at is not None
    with pytest.raises(CommandError, match="no API key with prefix 'mg_000000000000'"):
        call_command("revoke_api_key", "mg_000000000000", stdout=StringIO())
