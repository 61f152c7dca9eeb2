"""The dashboard's forms and links pass the same input boundary as the API: a NUL in a
form field is a 400, one in the query string a 422 naming the parameter, never a 500, and
nothing is decided."""

from __future__ import annotations

from audit.models import AuditEvent
from tests.dashboard.support import Demo


def test_a_nul_in_a_form_field_is_a_400_and_decides_nothing(demo: Demo) -> None:
    memory_id = demo.items["order_a"]
    events = AuditEvent.objects.count()

    response = demo.client("rita").post(
        f"/memories/{memory_id}/approve/", {"comment": "ORD-A\x00 v2"}
    )

    assert response.status_code == 400
    assert AuditEvent.objects.count() == events


def test_a_nul_in_a_dashboard_query_is_a_422_naming_the_parameter(demo: Demo) -> None:
    response = demo.client("rita").get("/entities/?q=Dana%00")

    assert response.status_code == 422
    assert response.json()["errors"] == {"q": ["must not contain NUL characters"]}


def test_a_page_number_that_is_not_ascii_digits_still_shows_a_page(demo: Demo) -> None:
    for page in ("²", "1" * 5000):
        assert demo.client("rita").get("/audit/", {"page": page}).status_code == 200
