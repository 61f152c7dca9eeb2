"""Who sees what: the queue holds what a reviewer may decide, and nothing else opens."""

from __future__ import annotations

import re
from datetime import timedelta

from django.test import Client
from django.utils import timezone

from memory import proposals
from memory.models import MemoryVersion
from tests.conftest import later
from tests.dashboard.support import Demo, outsider

QUEUE_LINK = re.compile(r'href="/memories/(mem_\w+)/" class="strong"')


def _queue(client: Client) -> list[str]:
    response = client.get("/")
    assert response.status_code == 200
    return QUEUE_LINK.findall(response.content.decode())


def _age(demo: Demo, key: str, hours: int) -> None:
    MemoryVersion.objects.filter(item_id=demo.items[key]).update(
        status_changed_at=timezone.now() - timedelta(hours=hours)
    )


def test_rita_sees_every_pending_item_oldest_first(demo: Demo) -> None:
    _age(demo, "tenant_rule", 50)
    _age(demo, "order_a", 30)
    _age(demo, "p9_rule", 3)

    assert _queue(demo.client("rita")) == [
        demo.items["tenant_rule"],
        demo.items["order_a"],
        demo.items["p9_rule"],
    ]


def test_the_queue_row_shows_age_kind_scope_approvals_and_preview_checks(demo: Demo) -> None:
    _age(demo, "p9_rule", 50)

    body = demo.client("omar").get("/").content.decode()

    start = body.index(f'<tr data-memory="{demo.items["p9_rule"]}"')
    row = body[start : body.index("</tr>", start)]
    assert "2 days ago" in body  # 50 hours, rounded to its largest unit
    assert "enterprise rule" in row and "enterprise_rule<" not in row
    assert ">project=P-9<" in row and ">supplier=S-17<" in row and ">batch=B-3<" in row
    assert "nobody yet" in row and "(2 needed)" in row
    assert "8 of 8 passed" in row  # its sources are for staff: a visibility scenario too


def test_omar_sees_only_the_p9_items(demo: Demo) -> None:
    assert _queue(demo.client("omar")) == [demo.items["p9_rule"]]


def test_lena_reviews_rules_but_not_task_facts(demo: Demo) -> None:
    assert set(_queue(demo.client("lena"))) == {demo.items["p9_rule"], demo.items["tenant_rule"]}


def test_sam_without_review_authority_starts_on_his_memories_and_has_an_empty_queue(
    demo: Demo,
) -> None:
    start = demo.client("sam").get("/")
    response = demo.client("sam").get("/?view=all")

    assert (start.status_code, start["Location"]) == (302, "/mine/")
    assert QUEUE_LINK.findall(response.content.decode()) == []
    body = response.content.decode()
    assert "Nothing waits for your decision." not in body
    assert "You do not review memories, so no decision will ever wait for you here." in body
    assert 'href="/browse/?owner=sam"' in body


def test_an_item_outside_omars_scope_is_a_404_on_its_url(demo: Demo) -> None:
    client = demo.client("omar")

    refused = client.get(f"/memories/{demo.items['order_a']}/")
    allowed = client.get(f"/memories/{demo.items['p9_rule']}/")

    assert refused.status_code == 404
    assert "Order order-a goes to Dana" not in refused.content.decode()
    assert allowed.status_code == 200
    assert "Approve version 1" in allowed.content.decode()


def test_omar_cannot_act_on_an_item_outside_his_scope_either(demo: Demo) -> None:
    response = demo.client("omar").post(
        f"/memories/{demo.items['order_a']}/approve/", {"comment": "looks fine"}
    )

    assert response.status_code == 404
    assert demo.item("order_a").versions.get(number=1).approvals.count() == 0


def test_another_tenants_reviewer_gets_a_404_for_every_demo_item(
    demo: Demo, django_capture_on_commit_callbacks
) -> None:
    client = Client()
    client.force_login(outsider(django_capture_on_commit_callbacks))

    for memory_id in demo.items.values():
        assert client.get(f"/memories/{memory_id}/").status_code == 404
    assert _queue(client) == []


def test_the_owner_opens_their_item_without_review_authority(demo: Demo) -> None:
    """sam owns the order-a fact; the expiry and failure emails link him to it."""
    response = demo.client("sam").get(f"/memories/{demo.items['order_a']}/")

    assert response.status_code == 200
    assert "Approve version" not in response.content.decode()


def test_a_reviewer_never_finds_their_own_proposal_in_the_queue(
    demo: Demo, django_capture_on_commit_callbacks
) -> None:
    rita = demo.principal("rita")
    order = MemoryVersion.objects.get(item_id=demo.items["order_a"]).source_ids
    with django_capture_on_commit_callbacks(execute=True):
        mine = proposals.memory_propose(
            principal=rita,
            data={
                "kind": "task_fact",
                "subject": demo.item("order_a").subject_id,
                "field": "delivery_window",
                "value": "9-12",
                "statement": "Order order-a arrives in the morning.",
                "scope": {"task": "order-a"},
                "owner": "sam",
                "expires_at": later(7),
                "sources": order,
            },
        )

    assert mine.item_id not in _queue(demo.client("rita"))
    page = demo.client("rita").get(f"/memories/{mine.item_id}/").content.decode()
    assert "You proposed this version; another reviewer must decide." in page


def test_the_browser_filters_by_scope_and_lists_only_what_omar_may_open(demo: Demo) -> None:
    everything = demo.client("omar").get("/browse/").content.decode()
    p9 = demo.client("rita").get("/browse/?scope=project%3DP-9").content.decode()

    assert demo.items["p9_rule"] in everything
    assert demo.items["order_a"] not in everything
    assert demo.items["p9_rule"] in p9
    assert demo.items["tenant_rule"] not in p9
    assert demo.items["order_a"] not in p9


def test_an_item_proposed_seconds_ago_waits_just_now_not_0_minutes(demo: Demo) -> None:
    _age(demo, "p9_rule", 0)

    body = demo.client("omar").get("/").content.decode()

    assert "0\xa0minutes" not in body and "0 minutes" not in body
    assert "just now" in body


def test_the_refresh_answers_rows_and_questions_but_never_a_field_being_typed_in(
    demo: Demo,
) -> None:
    """Issue 43, point 8: what the 30-second refresh swaps holds no form: the filter and the
    bulk comment stay on the page as the reviewer left them."""
    body = demo.client("rita").get("/queue/rows/?view=all").content.decode()

    assert body.count("<tr data-memory=") == 3
    assert 'id="queue-held" hx-swap-oob="true"' in body
    assert "<form" not in body and "<select" not in body and 'id="bulk-comment"' not in body
