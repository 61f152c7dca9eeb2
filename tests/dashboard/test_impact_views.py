"""Issue 43, point 5: the Impact panel says whose view it shows, and shows each view the
tenant's agent keys get (resolve filters by a key's labels). What it says an agent is told
now, and after activation, is what resolve answers that agent's key."""

from __future__ import annotations

import json
import re
from typing import Any

from django.test import Client
from django.utils import timezone
from django.utils.html import strip_tags

from accounts import tenancy
from approvals.checking import preview
from approvals.services import version_approve
from core.models import ApiKey
from dashboard.impact import AgentView, Told, impact_views
from memory.models import MemoryVersion
from tests.dashboard.support import Demo

P9 = {"project": "P-9", "supplier": "S-17", "batch": "B-3"}
EXCEPTION = "follow exception APR-2291"


def _approve(demo: Demo, capture: Any, key: str) -> None:
    with capture(execute=True):
        for reviewer in ("rita", "lena"):
            version_approve(principal=demo.principal(reviewer), item=demo.item(key), comment="ok")
    assert demo.item(key).versions.get().status == "active"


def _keys(demo: Demo) -> dict[str, str]:
    """Raw key by prefix: an agent holding staff, as the demo's, and an intake agent with
    none. The demo's own key is revoked: its raw value is only in a file another test
    process may have written since."""
    ApiKey.objects.filter(tenant=demo.tenant, agent_name="assistant").update(
        revoked_at=timezone.now()
    )
    _, staff = tenancy.api_key_create(tenant=demo.tenant, agent_name="assistant", labels=["staff"])
    _, intake = tenancy.api_key_create(tenant=demo.tenant, agent_name="intake", labels=[])
    return {raw.split("_")[1]: raw for raw in (staff, intake)}


def _resolve(raw: str, subject: str, field: str, context: dict[str, str]) -> dict[str, Any]:
    response = Client().post(
        "/api/v1/resolve",
        {"subject": subject, "fields": [field], "context": context},
        content_type="application/json",
        headers={"Authorization": f"Bearer {raw}"},
    )
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def _said(told: Told) -> str | None:
    """What the panel says an agent gets: the value as JSON, or None for no answer."""
    return told.value if told.memory_id else None


def _got(body: dict[str, Any]) -> str | None:
    return json.dumps(body["facts"][0]["value"]) if body["facts"] else None


def _prefixes(view: AgentView) -> list[str]:
    return re.findall(r"\(key ([0-9a-f]+)…\)", " ".join(view.keys))


def _view_of(views: list[AgentView], prefix: str) -> AgentView:
    [view] = [v for v in views if prefix in _prefixes(v)]
    return view


def test_the_staff_agent_is_shown_the_p9_exception_and_the_label_less_agent_the_rule(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    """Seed 001: with the P-9 exception in use, an agent holding ``staff`` keeps being told
    the exception in P-9 once the tenant-wide rule is active; an agent without the label
    never saw the exception and is told the rule."""
    _approve(demo, django_capture_on_commit_callbacks, "p9_rule")
    _keys(demo)
    rule = MemoryVersion.objects.get(item_id=demo.items["tenant_rule"])

    views = impact_views(demo.principal("rita"), rule)

    assert views is not None
    assert [(v.who, v.key_count, v.everyone) for v in views] == [
        ("agents with no label", 1, False),
        ("agents with the label staff", 1, False),
    ]
    none, staff = ({tuple(sorted(r.context.items())): r for r in v.rows} for v in views)
    p9 = tuple(sorted(P9.items()))
    assert (_said(staff[p9].before), _said(staff[p9].after)) == (
        json.dumps(EXCEPTION),
        json.dumps(EXCEPTION),
    )
    assert not staff[p9].changed
    assert (_said(none[p9].before), _said(none[p9].after)) == (None, '"required"')
    assert none[p9].changed


def test_every_key_is_told_by_resolve_what_its_view_says_now_and_after_activation(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    _approve(demo, django_capture_on_commit_callbacks, "p9_rule")
    keys = _keys(demo)
    rule = MemoryVersion.objects.get(item_id=demo.items["tenant_rule"])
    views = impact_views(demo.principal("rita"), rule)
    assert views is not None and sorted(p for v in views for p in _prefixes(v)) == sorted(keys)
    subject = str(rule.subject_id)

    def told(when: str) -> list[tuple[str, str, str | None, str | None]]:
        found = []
        for prefix, raw in sorted(keys.items()):
            for row in _view_of(views, prefix).rows:
                body = _resolve(raw, subject, rule.field, row.context)
                said = _said(row.before if when == "now" else row.after)
                found.append((prefix, json.dumps(row.context), said, _got(body)))
        return found

    now = told("now")
    assert len(now) == 2 * len(keys)  # its own scope and P-9, for each key
    assert [said for _, _, said, _ in now] == [got for _, _, _, got in now]
    _approve(demo, django_capture_on_commit_callbacks, "tenant_rule")
    after = told("after")
    assert [said for _, _, said, _ in after] == [got for _, _, _, got in after]


def test_keys_told_the_same_share_one_view_labelled_as_everyone(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    """Before the exception is in use, the label does not change what anyone is told."""
    tenancy.api_key_create(tenant=demo.tenant, agent_name="intake", labels=[])
    rule = MemoryVersion.objects.get(item_id=demo.items["tenant_rule"])

    [view] = impact_views(demo.principal("rita"), rule) or []

    assert view.everyone and view.key_count == 2
    assert view.who == "agents with no label, or with the label staff"
    assert view.whose.startswith("Every agent key of this tenant is told the same")


def test_the_panel_names_whose_view_each_part_is_and_its_keys(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    _approve(demo, django_capture_on_commit_callbacks, "p9_rule")
    keys = _keys(demo)

    page = demo.client("rita").get(f"/memories/{demo.items['tenant_rule']}/")

    html = page.content.decode()
    at = html.index('id="impact"')
    impact = " ".join(strip_tags(html[at : html.index("</section>", at)]).split())
    assert "Agents holding different labels are told different things here" in impact
    assert "As agents with no label see it." in impact
    assert "As agents with the label staff see it." in impact
    for prefix in keys:
        assert f"(key {prefix}…)" in impact
    assert impact.index("with no label") < impact.index("with the label staff")


def test_a_tenant_without_agent_keys_says_whose_view_is_shown(demo: Demo) -> None:
    for key in demo.tenant.api_keys.filter(principal="agent"):
        tenancy.api_key_revoke(key=key)
    rule = MemoryVersion.objects.get(item_id=demo.items["tenant_rule"])

    [view] = impact_views(demo.principal("rita"), rule) or []

    assert view.no_keys and view.whose.startswith("No agent key of this tenant can resolve now")


def test_the_regression_check_sees_the_p9_exception_a_label_less_agent_is_not_shown(
    demo: Demo, django_capture_on_commit_callbacks: Any
) -> None:
    """The checks judge what the resolver does, not what one reader may see: the
    tenant-wide rule's regression check in P-9 finds the exception in force there (the
    staff agent's answer), as the Impact panel shows it, and not the label-less "nothing"."""
    _approve(demo, django_capture_on_commit_callbacks, "p9_rule")
    rule = MemoryVersion.objects.get(item_id=demo.items["tenant_rule"])

    preview(rule.pk)

    [regression] = [c for c in rule.checks.all() if c.scenario["kind"] == "regression"]
    assert regression.scenario["context"] == P9
    assert regression.outcome == "passed"
    # The exception keeps answering in P-9: nothing changes there (a label-less view
    # would report "nothing → required").
    assert regression.impact == []
