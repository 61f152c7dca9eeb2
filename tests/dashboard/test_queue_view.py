"""Issue 37, point 6: the queue shows what a reviewer decides on (subject, value, owner,
expiry, who approved), filters and sorts, remembers a view per person, and approves
many at once through the one approval service, reporting each memory on its own."""

from __future__ import annotations

import re
from datetime import timedelta

from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from memory.models import MemoryVersion
from tests.dashboard.support import Demo

ROW = re.compile(r'<tr data-memory="(mem_\w+)"')


def _rows(client: Client, query: str = "") -> list[str]:
    response = client.get(f"/{query}")
    assert response.status_code == 200
    return ROW.findall(response.content.decode())


def _row_html(body: str, memory_id: str) -> str:
    start = body.index(f'<tr data-memory="{memory_id}"')
    return body[start : body.index("</tr>", start)]


def _messages(response: object) -> list[str]:
    return [str(m) for m in response.context["messages"]]  # type: ignore[attr-defined]


def test_each_row_names_subject_value_owner_expiry_and_who_approved(demo: Demo) -> None:
    demo.client("lena").post(f"/memories/{demo.items['p9_rule']}/approve/", {"comment": ""})
    expiry = timezone.now() + timedelta(days=40)
    MemoryVersion.objects.filter(item_id=demo.items["order_a"]).update(expires_at=expiry)
    MemoryVersion.objects.filter(item_id=demo.items["p9_rule"]).update(expires_at=None)

    body = demo.client("rita").get("/").content.decode()

    order = _row_html(body, demo.items["order_a"])
    assert ">Dana Kim<" in order
    assert ">sam<" in order  # the owner
    assert expiry.astimezone(demo.tenant.zone).strftime("%Y-%m-%d") in order
    assert "nobody yet" in order
    rule = _row_html(body, demo.items["p9_rule"])
    assert "lena" in rule and "(1 of 2)" in rule
    assert ">never<" in rule


def test_filters_by_kind_scope_field_and_owner_and_sorts(demo: Demo) -> None:
    rita = demo.client("rita")
    everything = _rows(rita)

    assert _rows(rita, "?kind=task_fact") == [demo.items["order_a"]]
    assert _rows(rita, "?kind=enterprise_rule&scope=project%3DP-9") == [demo.items["p9_rule"]]
    assert _rows(rita, "?owner=nobody") == []
    assert len(everything) == 3
    assert _rows(rita, "?sort=newest") == list(reversed(everything))
    field = MemoryVersion.objects.get(item_id=demo.items["order_a"]).field
    assert _rows(rita, f"?field={field}") == [demo.items["order_a"]]
    body = rita.get("/?owner=nobody").content.decode()
    assert "No memory waiting for you matches this view." in body
    assert "Show everything waiting (3)" in body


def test_a_saved_view_opens_for_its_reviewer_only_until_forgotten(demo: Demo) -> None:
    rita = demo.client("rita")
    saved = rita.post("/queue/view/", {"kind": "enterprise_rule", "sort": "newest"})

    assert saved.status_code == 302
    assert saved["Location"] == "/?kind=enterprise_rule&sort=newest"
    assert set(_rows(rita)) == {demo.items["p9_rule"], demo.items["tenant_rule"]}
    assert "This is your saved view" in rita.get("/").content.decode()
    assert len(_rows(rita, "?view=all")) == 3
    assert len(_rows(demo.client("lena"))) == 2  # lena has no saved view; rules are hers

    rita.post("/queue/view/", {"forget": "1"})
    assert len(_rows(rita)) == 3


def test_bulk_approve_goes_through_the_service_for_each_and_reports_each(demo: Demo) -> None:
    """omar ticks the P-9 rule and (from a stale page or a forged form) order-a, which is
    outside his scope: the first is approved and audited, the second refused alone."""
    p9, order_a = demo.items["p9_rule"], demo.items["order_a"]

    response = demo.client("omar").post(
        "/queue/approve/", {"memory": [p9, order_a], "comment": "read both"}, follow=True
    )

    said = _messages(response)
    assert said[0] == "Approved 1 of 2."
    assert said[1] == (
        "“Renewals of project P-9 with S-17, batch B-3, follow exception APR-2291.”: "
        "Approved (1 of 2). Waiting for another reviewer."
    )
    assert said[2] == "“A memory you can no longer open”: not approved: it is not yours to decide."
    assert not any(order_a in s for s in said)
    assert AuditEvent.objects.filter(action="memory.approved", target_id=p9).count() == 1
    assert not AuditEvent.objects.filter(action="memory.approved", target_id=order_a).exists()
    assert MemoryVersion.objects.get(item_id=order_a).approvals.count() == 0


def test_bulk_approve_reports_a_memory_decided_meanwhile_and_approves_the_rest(
    demo: Demo,
) -> None:
    rita = demo.client("rita")
    order_a, tenant_rule = demo.items["order_a"], demo.items["tenant_rule"]
    demo.client("lena").post(f"/memories/{tenant_rule}/reject/", {"reason": "too broad"})

    response = rita.post("/queue/approve/", {"memory": [order_a, tenant_rule]}, follow=True)

    said = _messages(response)
    assert said[0] == "Approved 1 of 2."
    assert said[1].startswith("“Order order-a goes to Dana's office.”: Approved.")
    assert said[2] == (
        "“Supplier material checks are required.”: not approved: it changed after the "
        "queue was loaded and is now “rejected”."
    )
    assert MemoryVersion.objects.get(item_id=order_a).status in {"checking", "active"}


def test_approve_and_next_opens_the_next_memory_of_the_saved_view(demo: Demo) -> None:
    rita = demo.client("rita")
    rita.post("/queue/view/", {"kind": "enterprise_rule"})
    first, second = _rows(rita)

    response = rita.post(f"/memories/{first}/approve/", {"comment": "", "then": "next"})

    assert response.status_code == 302
    assert response["Location"] == f"/memories/{second}/"
    last = rita.post(f"/memories/{second}/approve/", {"comment": "", "then": "next"})
    assert last["Location"] == "/"  # nothing else of that view waits for rita
