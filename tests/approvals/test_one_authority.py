"""One authority rule (docs/design.md, Permissions), asked by the API, the dashboard queue and
the emails alike: a person may decide an item when they hold the kind's review
permission on the tenant or on a scope value the item names, directly or through a
group; a tenant-wide rule also needs ``approve_tenant_wide_rule``; other permissions on
the tenant grant nothing over items."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail
from django.test import Client

from accounts.grants import permission_grant
from audit.models import AuditEvent
from core.authority import Authority, reviewers_for
from core.principals import principal_for_user
from dashboard.queue import review_queue
from memory.models import MemoryVersion, Status
from tests.approvals.support import Flow, head, person

QUEUE_LINK = re.compile(r'href="/memories/(mem_\w+)/" class="strong"')
P9 = {"project": "P-9", "supplier": "S-17"}


def grant_to_group(flow: Flow, user: User, grant: str) -> None:
    """``PERM`` or ``PERM@DIM=VALUE`` granted to a group ``user`` belongs to."""
    perm, _, target = grant.partition("@")
    dim, _, value = target.partition("=")
    group, _ = Group.objects.get_or_create(name=f"{user.username}-team")
    group.user_set.add(user)
    permission_grant(
        group=group,
        tenant=flow.world.tenant,
        codename=perm,
        dimension=dim or None,
        value=value or None,
    )


def queue_of(user: User) -> list[str]:
    client = Client()
    client.force_login(user)
    response = client.get("/?view=all")  # a bare "/" takes a non-reviewer to /mine/
    assert response.status_code == 200
    return QUEUE_LINK.findall(response.content.decode())


def emailed(address: str) -> bool:
    return any(address in message.to for message in mail.outbox)


# (direct grants, group grants, kind, scope, may decide)
TABLE = [
    (["review_enterprise_rule"], [], "enterprise_rule", P9, True),
    (["review_enterprise_rule@project=P-9"], [], "enterprise_rule", P9, True),
    (["review_enterprise_rule@supplier=S-17"], [], "enterprise_rule", P9, True),
    (["review_enterprise_rule@project=P-10"], [], "enterprise_rule", P9, False),
    (["review_task_fact"], [], "enterprise_rule", P9, False),
    (["view_audit", "manage_policy", "retire_memory"], [], "enterprise_rule", P9, False),
    ([], ["review_enterprise_rule"], "enterprise_rule", P9, True),
    ([], ["review_enterprise_rule@project=P-9"], "enterprise_rule", P9, True),
    ([], ["review_enterprise_rule@project=P-10"], "enterprise_rule", P9, False),
    (["review_task_fact@project=P-9"], [], "task_fact", {"task": "r-3", **P9}, True),
    ([], ["review_task_fact@project=P-9"], "task_fact", {"task": "r-3", **P9}, True),
    (["review_enterprise_rule@project=P-9"], [], "task_fact", {"task": "r-3", **P9}, False),
    (["review_enterprise_rule"], [], "enterprise_rule", {"tenant": "*"}, False),
    (
        ["review_enterprise_rule"],
        ["approve_tenant_wide_rule"],
        "enterprise_rule",
        {"tenant": "*"},
        True,
    ),
    (
        ["review_enterprise_rule@project=P-9", "approve_tenant_wide_rule"],
        [],
        "enterprise_rule",
        {"tenant": "*"},
        False,
    ),
]


@pytest.mark.parametrize(("direct", "via_group", "kind", "scope", "decides"), TABLE)
def test_the_api_the_queue_and_the_emails_agree_on_who_may_decide(
    flow: Flow,
    direct: list[str],
    via_group: list[str],
    kind: str,
    scope: dict[str, str],
    decides: bool,
):
    tess = person(flow.world, "tess", *direct)
    for grant in via_group:
        grant_to_group(flow, tess, grant)
    mail.outbox.clear()

    memory = flow.propose(kind, scope)

    emailed_tess = emailed("tess@example.com")
    listed = memory["id"] in queue_of(tess)
    approve = flow.post("tess", f"/memories/{memory['id']}/approve", {"comment": "checked"})
    assert (emailed_tess, listed, approve.status_code) == (
        decides,
        decides,
        200 if decides else 403,
    )


def test_a_group_granted_reviewer_gets_the_pending_email_and_can_approve(flow: Flow):
    gus = person(flow.world, "gus")
    grant_to_group(flow, gus, "review_enterprise_rule@project=P-9")
    mail.outbox.clear()

    memory = flow.rule({"project": "P-9"})

    [message] = [m for m in mail.outbox if m.to == ["gus@example.com"]]
    assert memory["id"] in message.body
    flow.approve(memory["id"], "gus", "rita")
    assert flow.memory(memory["id"])["status"] == "active"


def test_a_group_grant_is_audited_under_the_groups_name(flow: Flow):
    grant_to_group(flow, person(flow.world, "gus"), "review_task_fact@project=P-9")

    event = AuditEvent.objects.filter(tenant=flow.world.tenant, action="permission.granted").last()
    assert event is not None
    assert (event.target_type, event.target_id, event.data) == (
        "group",
        "gus-team",
        {"permission": "review_task_fact", "on": "project=P-9"},
    )


def test_leaving_the_group_ends_the_authority(flow: Flow):
    gus = person(flow.world, "gus")
    grant_to_group(flow, gus, "review_enterprise_rule")
    Group.objects.get(name="gus-team").user_set.remove(gus)
    mail.outbox.clear()

    memory = flow.rule({"project": "P-9"})

    assert not emailed("gus@example.com")
    assert flow.post("gus", f"/memories/{memory['id']}/approve", {"comment": "x"}).status_code == (
        403
    )


def test_a_deactivated_person_holds_no_authority_even_through_a_group(flow: Flow):
    gus = person(flow.world, "gus", "review_enterprise_rule@project=P-9")
    grant_to_group(flow, gus, "review_enterprise_rule")
    memory = flow.rule({"project": "P-9"})
    version = head(memory["id"])
    principal = principal_for_user(gus)
    assert principal is not None
    assert Authority.load(principal).may_decide(version)

    gus.is_active = False
    gus.save(update_fields=["is_active"])

    assert not Authority.load(principal).may_review(version)
    assert "gus" not in [u.username for u in reviewers_for([version])[version.pk]]


def _many_pending(flow: Flow, count: int) -> list[MemoryVersion]:
    for n in range(count):
        flow.propose("task_fact", {"task": f"renewal-{n}", "project": "P-9"})
    return list(MemoryVersion.objects.filter(status=Status.PENDING_REVIEW))


def test_the_reviewers_of_a_whole_digest_cost_two_queries(flow: Flow, django_assert_num_queries):
    gus = person(flow.world, "gus")
    grant_to_group(flow, gus, "review_task_fact@project=P-9")
    versions = _many_pending(flow, 12)

    with django_assert_num_queries(2):  # the grants in one statement, then their people
        reviewers = reviewers_for(versions)

    assert {v.pk: sorted(u.username for u in reviewers[v.pk]) for v in versions} == {
        v.pk: ["gus", "omar", "rita"] for v in versions
    }


def test_the_queue_costs_the_same_queries_for_two_items_or_twelve(
    flow: Flow, django_assert_num_queries
):
    omar = principal_for_user(flow.world.users["omar"])
    assert omar is not None
    _many_pending(flow, 2)
    with django_assert_num_queries(9):
        assert len(review_queue(omar)[0]) == 2
    _many_pending(flow, 10)

    with django_assert_num_queries(9):
        assert len(review_queue(omar)[0]) == 12
