"""Every state-changing dashboard request needs the CSRF token of the session."""

from __future__ import annotations

import re

from django.urls import URLPattern, reverse

from dashboard import urls as urls_dashboard
from memory.models import MemoryVersion
from tests.dashboard.support import Demo


def _every_dashboard_path(demo: Demo) -> dict[str, str]:
    args = {
        "memory_id": demo.items["order_a"],
        "source_id": MemoryVersion.objects.get(item_id=demo.items["order_a"]).source_ids[0],
        "job_id": "rvl_unknown",
        "entity_id": demo.item("order_a").subject_id,
        "erasure_id": "era_unknown",
        "scenario_id": 1,
        "webhook_id": "whk_unknown",
    }
    paths = {}
    for pattern in urls_dashboard.urlpatterns:
        assert isinstance(pattern, URLPattern)
        names = re.findall(r"<(?:str|int):(\w+)>", str(pattern.pattern))
        paths[str(pattern.name)] = reverse(
            f"dashboard:{pattern.name}", kwargs={n: args[n] for n in names}
        )
    return paths


def test_every_dashboard_post_without_a_csrf_token_is_refused(demo: Demo) -> None:
    client = demo.client("rita", enforce_csrf_checks=True)
    paths = _every_dashboard_path(demo)
    assert {"approve", "reject", "retire", "recheck", "add-scenario", "link-subject"} <= set(paths)
    assert {"revoke-source", "audit-verify", "policy-publish", "policy-revalidate"} <= set(paths)

    for name, path in paths.items():
        response = client.post(path, {"comment": "ok", "reason": "because", "subject": "x"})
        assert response.status_code == 403, name
        assert b"CSRF" in response.content, name

    order_a = demo.item("order_a")
    assert order_a.versions.get(number=1).status == "pending_review"
    assert order_a.versions.get(number=1).approvals.count() == 0


def test_the_same_post_with_the_token_is_accepted(demo: Demo, django_capture_on_commit_callbacks):
    client = demo.client("rita", enforce_csrf_checks=True)
    memory_id = demo.items["order_a"]
    page = client.get(f"/memories/{memory_id}/")
    token = page.cookies["csrftoken"].value

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/memories/{memory_id}/approve/", {"comment": "ok", "csrfmiddlewaretoken": token}
        )

    assert response.status_code == 302
    assert demo.item("order_a").versions.get(number=1).status == "active"


def test_signing_out_needs_the_token_too(demo: Demo) -> None:
    client = demo.client("rita", enforce_csrf_checks=True)

    assert client.post("/accounts/logout/").status_code == 403
    assert client.get("/").status_code == 200
