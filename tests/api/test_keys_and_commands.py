"""API keys are shown once and never stored or logged in clear; the operator commands of
docs/api.md create tenants, people with scoped authority and keys that work."""

from __future__ import annotations

import logging
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from rest_framework.test import APIClient

from audit.models import AuditEvent
from core.authority import Authority
from core.models import (
    ApiKey,
    Membership,
    ScopeValue,
    ScopeValueUserObjectPermission,
    Tenant,
    TenantUserObjectPermission,
)
from core.principals import Principal
from memory.models import Policy
from tests.api.support import assert_problem, tamper


def _secret(raw: str) -> str:
    """The part after ``mg_<prefix>_``: the prefix is a lookup id, not a secret."""
    return raw.split("_", 2)[2]


def _every_stored_value() -> str:
    """Every row of every table, as text."""
    dump = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608 - our own table names
            dump += [repr(row) for row in cursor.fetchall()]
    return "\n".join(dump)


def _bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_no_raw_key_is_stored_in_any_column(world):
    world.client("agent").post("/api/v1/sources", {"kind": "message", "content": "hi"}, "json")
    world.client("rita").get("/api/v1/audit/verify")

    stored = _every_stored_value()

    for raw in world.keys.values():
        assert _secret(raw) not in stored
    key = ApiKey.objects.get(prefix=world.keys["agent"].split("_")[1])
    assert key.key_hash in stored  # the sha256 is what is kept
    assert len(key.key_hash) == 64


def test_no_raw_key_appears_in_the_logs_of_a_request(world, caplog):
    """Not in application logs, not in the SQL Django logs at DEBUG, not on a refused key."""
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="django.db.backends")
    connection.force_debug_cursor = True
    wrong = world.keys["nora"][:-4] + "AAAA"
    try:
        world.client("agent").post("/api/v1/sources", {"kind": "message", "content": "hi"}, "json")
        world.client("rita").get("/api/v1/audit?limit=5")
        assert _bearer(wrong).get("/api/v1/memories").status_code == 401
    finally:
        connection.force_debug_cursor = False

    assert "SELECT" in caplog.text  # the SQL really was logged
    for raw in [*world.keys.values(), wrong]:
        assert _secret(raw) not in caplog.text


def test_a_revoked_key_is_a_401_on_its_next_request(world, django_capture_on_commit_callbacks):
    agent = world.client("agent")
    assert agent.get("/api/v1/memories").status_code == 200
    prefix = world.keys["agent"].split("_")[1]

    with django_capture_on_commit_callbacks(execute=True):
        call_command("revoke_api_key", prefix, stdout=StringIO())

    assert_problem(agent.get("/api/v1/memories"), 401)
    assert ApiKey.objects.get(prefix=prefix).revoked_at is not None
    assert world.client("nora").get("/api/v1/memories").status_code == 200
    assert AuditEvent.objects.filter(action="api_key.revoked", target_id=prefix).count() == 1


def test_last_used_at_is_recorded_at_most_once_a_minute(world):
    key = ApiKey.objects.get(prefix=world.keys["nora"].split("_")[1])
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=None)

    world.client("nora").get("/api/v1/memories")
    key.refresh_from_db()
    first_use = key.last_used_at
    world.client("nora").get("/api/v1/memories")
    key.refresh_from_db()

    assert first_use is not None
    assert key.last_used_at == first_use


def test_a_key_unused_since_creation_has_no_last_use(world):
    out = StringIO()
    call_command("create_api_key", tenant="acme", agent="idle", stdout=out)
    raw = out.getvalue().strip().splitlines()[-1]

    assert ApiKey.objects.get(prefix=raw.split("_")[1]).last_used_at is None


# Operator commands


def test_create_tenant_creates_the_tenant_with_its_first_policy(db):
    out = StringIO()

    call_command("create_tenant", "initech", name="Initech", stdout=out)

    tenant = Tenant.objects.get(slug="initech")
    assert tenant.name == "Initech"
    assert list(Policy.objects.filter(tenant=tenant).values_list("version", flat=True)) == [1]
    assert out.getvalue().strip() == "created tenant initech (times shown in UTC)"
    assert AuditEvent.objects.filter(tenant=tenant, action="tenant.created").count() == 1


def test_create_tenant_settings_are_set_through_an_audited_change(db):
    call_command(
        "create_tenant",
        "initech",
        approvals_required=3,
        revalidation_failure="flag",
        stdout=StringIO(),
    )

    tenant = Tenant.objects.get(slug="initech")
    assert (tenant.approvals_required, tenant.revalidation_failure) == (3, "flag")
    [change] = AuditEvent.objects.filter(tenant=tenant, action="tenant.settings_changed")
    assert change.actor == "operator"
    assert change.data == {
        "approvals_required": {"from": 2, "to": 3},
        "revalidation_failure": {"from": "suspend", "to": "flag"},
    }


def test_create_tenant_without_settings_keeps_the_defaults_and_audits_no_change(db):
    call_command("create_tenant", "initech", stdout=StringIO())

    tenant = Tenant.objects.get(slug="initech")
    assert tenant.revalidation_failure == "suspend"
    assert not AuditEvent.objects.filter(tenant=tenant, action="tenant.settings_changed").exists()


def test_the_database_refuses_an_unknown_revalidation_failure_setting(world):
    with pytest.raises(IntegrityError), transaction.atomic():
        Tenant.objects.filter(pk=world.tenant.pk).update(revalidation_failure="ignore")


def test_the_policy_shows_the_tenants_revalidation_failure_setting(world):
    response = world.client("agent").get("/api/v1/policy")

    assert response.json()["revalidation_failure"] == "suspend"


def test_create_tenant_refuses_an_existing_slug(world):
    with pytest.raises(CommandError, match="already exists"):
        call_command("create_tenant", "acme", stdout=StringIO())

    assert Tenant.objects.filter(slug="acme").count() == 1


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--approvals-required", "0"),
        ("--time-zone", "Mars/Olympus"),
        ("--revalidation-failure", "maybe"),
    ],
)
def test_create_tenant_with_a_refused_setting_creates_no_tenant(db, flag: str, value: str):
    with pytest.raises(CommandError):
        call_command("create_tenant", "beta", flag, value, stdout=StringIO())

    assert not Tenant.objects.filter(slug="beta").exists()
    assert not AuditEvent.objects.filter(action="tenant.created").exists()


def test_create_user_grants_on_the_tenant_and_on_a_scope_value(world):
    call_command(
        "create_user",
        "ivan",
        tenant="acme",
        password="ivan-pass-123",
        email="ivan@example.com",
        labels="staff,legal",
        grant=["review_task_fact", "review_enterprise_rule@project=P-9", "view_audit"],
        stdout=StringIO(),
    )

    ivan = Membership.objects.select_related("user").get(user__username="ivan")
    assert ivan.tenant == world.tenant
    assert sorted(ivan.labels) == ["legal", "staff"]
    assert ivan.user.check_password("ivan-pass-123")
    principal = Principal(tenant=world.tenant, name="user:ivan", labels=frozenset(), user=ivan.user)
    authority = Authority.load(principal)
    assert authority.has("review_task_fact")
    assert authority.has("view_audit")
    assert not authority.has("review_enterprise_rule")
    p9 = ScopeValue.objects.get(tenant=world.tenant, dimension="project", value="P-9")
    granted = ScopeValueUserObjectPermission.objects.filter(user=ivan.user, content_object=p9)
    assert [g.permission.codename for g in granted] == ["review_enterprise_rule"]
    assert authority.holds("review_enterprise_rule", {"project": "P-9"})
    assert not authority.holds("review_enterprise_rule", {"project": "P-10"})


def test_guardian_sees_the_tenant_grant_as_an_object_permission(world):
    call_command("create_user", "ivan", tenant="acme", grant=["retire_memory"], stdout=StringIO())

    ivan = Membership.objects.get(user__username="ivan").user
    assert ivan.has_perm("core.retire_memory", world.tenant)
    assert not ivan.has_perm("core.retire_memory", world.other_tenant)
    assert not ivan.has_perm("core.retire_memory")  # object permission, never global


@pytest.mark.parametrize(
    "grant",
    [
        "review_everything",
        "review_task_fact@Project=P-9",
        "review_task_fact@project",
        "review_task_fact@project=",
        "review_task_fact@=P-9",
        "REVIEW_TASK_FACT",
        "add_user",
    ],
)
def test_create_user_refuses_a_bad_grant_and_creates_nobody(world, grant: str):
    events = AuditEvent.objects.count()

    with pytest.raises(CommandError, match="--grant"):
        call_command("create_user", "ivan", tenant="acme", grant=[grant], stdout=StringIO())

    assert not Membership.objects.filter(user__username="ivan").exists()
    assert AuditEvent.objects.count() == events


def test_create_user_refuses_an_unknown_tenant(db):
    with pytest.raises(CommandError, match="no tenant"):
        call_command("create_user", "ivan", tenant="nowhere", stdout=StringIO())


def test_create_api_key_prints_the_key_alone_on_the_last_line_and_it_authenticates(world):
    out = StringIO()

    call_command("create_api_key", tenant="acme", agent="intake", labels="staff", stdout=out)

    raw = out.getvalue().rstrip("\n").splitlines()[-1]
    assert raw == raw.strip()
    assert raw.startswith("mg_")
    assert " " not in raw
    source = _bearer(raw).post("/api/v1/sources", {"kind": "message", "content": "hi"}, "json")
    assert source.status_code == 201
    assert (
        AuditEvent.objects.filter(tenant=world.tenant, action="source.recorded").latest("seq").actor
        == "agent:intake"
    )


def test_a_user_key_acts_with_that_persons_permissions(world):
    out = StringIO()
    call_command("create_user", "ivan", tenant="acme", grant=["view_audit"], stdout=StringIO())
    call_command("create_api_key", tenant="acme", user="ivan", stdout=out)
    ivan = _bearer(out.getvalue().splitlines()[-1])

    assert ivan.get("/api/v1/audit/verify").status_code == 200
    assert ApiKey.objects.get(user__username="ivan").labels == []


def test_an_agent_key_never_reads_the_audit_trail(world):
    out = StringIO()
    call_command("create_api_key", tenant="acme", agent="intake", stdout=out)

    assert_problem(_bearer(out.getvalue().splitlines()[-1]).get("/api/v1/audit/verify"), 403)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"tenant": "nowhere", "agent": "bot"}, "no tenant"),
        ({"tenant": "acme", "user": "zed"}, "no user"),  # zed is a Globex user
        ({"tenant": "acme", "user": "nobody"}, "no user"),
    ],
)
def test_create_api_key_refuses_what_does_not_exist(world, options, message: str):
    keys = ApiKey.objects.count()

    with pytest.raises(CommandError, match=message):
        call_command("create_api_key", stdout=StringIO(), **options)

    assert ApiKey.objects.count() == keys


def test_create_api_key_needs_exactly_one_of_agent_or_user(world):
    with pytest.raises(CommandError):
        call_command("create_api_key", "--tenant=acme", stdout=StringIO(), stderr=StringIO())
    with pytest.raises(CommandError):
        call_command(
            "create_api_key",
            "--tenant=acme",
            "--agent=bot",
            "--user=rita",
            stdout=StringIO(),
            stderr=StringIO(),
        )


def test_verify_audit_reports_every_tenant_ok(world):
    out = StringIO()

    call_command("verify_audit", stdout=out)

    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["acme", "globex"]
    assert all(": ok, " in line for line in lines)


def test_verify_audit_exits_1_at_a_broken_link(world):
    tampered = AuditEvent.objects.filter(tenant=world.tenant).order_by("seq")[2]
    tamper("UPDATE audit_auditevent SET actor = 'user:mallory' WHERE id = %s", [tampered.pk])
    out = StringIO()

    with pytest.raises(CommandError, match="acme") as broken:
        call_command("verify_audit", stdout=out)

    assert broken.value.returncode == 1
    assert f"acme: BROKEN at seq {tampered.seq}" in out.getvalue()
    assert "globex: ok" in out.getvalue()
    call_command("verify_audit", tenant="globex", stdout=StringIO())  # the other chain holds


def test_verify_audit_refuses_an_unknown_tenant(db):
    with pytest.raises(CommandError, match="no tenant"):
        call_command("verify_audit", tenant="nowhere", stdout=StringIO())


def test_tenant_permissions_live_in_guardians_direct_tables(world):
    rita = world.users["rita"]

    codenames = set(
        TenantUserObjectPermission.objects.filter(user=rita).values_list(
            "permission__codename", flat=True
        )
    )

    assert codenames == {
        "review_task_fact", "review_enterprise_rule", "approve_tenant_wide_rule",
        "retire_memory", "manage_policy", "view_audit",
    }  # fmt: skip
