"""Issue 37, point 8: the history timeline's ticks, its table and the audit filter all
speak the tenant's time zone, and say which it is."""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone

from dashboard.charts import TimeScale
from tests.dashboard.support import Demo


def test_timeline_ticks_are_in_the_active_zone_not_utc() -> None:
    scale = TimeScale.around(
        [datetime(2026, 3, 1, 10, 0, tzinfo=UTC), datetime(2026, 3, 1, 11, 0, tzinfo=UTC)], 0, 600
    )

    with timezone.override("Asia/Kolkata"):
        labels = [label for _, label in scale.ticks()]

    # 10:00 UTC less 6 % of an hour of padding is 09:56:24 UTC, 15:26:24 in India.
    assert labels[0] == "15:26:24"
    assert labels[-1] == "16:33:36"


def test_the_item_page_and_the_audit_filter_name_the_tenants_zone(demo: Demo) -> None:
    demo.tenant.time_zone = "Asia/Kolkata"
    demo.tenant.save(update_fields=["time_zone"])
    rita = demo.client("rita")

    item = rita.get(f"/memories/{demo.items['order_a']}/").content.decode()
    audit = rita.get("/audit/").content.decode()

    assert "Times in Asia/Kolkata." in item
    assert "Recorded (Asia/Kolkata)" in item and "In use (Asia/Kolkata)" in item
    assert "Since (Asia/Kolkata)" in audit
    assert "When (Asia/Kolkata)" in audit
    assert ">UTC<" not in audit
