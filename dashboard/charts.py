"""Server-side SVG geometry: the page gets rectangles and labels, no JavaScript charts.

Each chart also hands the template its raw numbers, which are shown as a table for screen
readers and for anyone who wants the exact values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

CHART_WIDTH = 420
CHART_HEIGHT = 190
BAR_TOP = 16
BAR_BOTTOM = 28  # room for the labels under the bars


@dataclass(frozen=True)
class Bar:
    label: str
    detail: str  # the label in full, for the tooltip and the data table
    value: int
    x: float
    y: float
    width: float
    height: float
    text_x: float


@dataclass(frozen=True)
class BarChart:
    title: str
    axis_name: str
    bars: tuple[Bar, ...]
    width: int
    height: int
    baseline: float
    total: int
    peak: int


def bar_chart(title: str, axis_name: str, series: Sequence[tuple[str, str, int]]) -> BarChart:
    """Bars scaled to the tallest value; a zero shows as a hairline so the slot is visible.
    ``series`` holds (short label, full label, value)."""
    peak = max((value for _, _, value in series), default=0)
    usable = CHART_HEIGHT - BAR_TOP - BAR_BOTTOM
    slot = CHART_WIDTH / max(len(series), 1)
    bars = []
    for index, (label, detail, value) in enumerate(series):
        height = usable * value / peak if peak else 0.0
        height = max(height, 1.0)
        x = index * slot + slot * 0.15
        bars.append(
            Bar(
                label=label,
                detail=detail,
                value=value,
                x=round(x, 1),
                y=round(BAR_TOP + usable - height, 1),
                width=round(slot * 0.7, 1),
                height=round(height, 1),
                text_x=round(x + slot * 0.35, 1),
            )
        )
    return BarChart(
        title=title,
        axis_name=axis_name,
        bars=tuple(bars),
        width=CHART_WIDTH,
        height=CHART_HEIGHT,
        baseline=BAR_TOP + usable,
        total=sum(value for _, _, value in series),
        peak=peak,
    )


@dataclass(frozen=True)
class TimeScale:
    """Maps instants onto the horizontal axis shared by valid time and system time."""

    start: datetime
    end: datetime
    left: float
    right: float

    @classmethod
    def around(cls, moments: Sequence[datetime], left: float, right: float) -> TimeScale:
        low, high = min(moments), max(moments)
        span = high - low if high > low else timedelta(days=1)
        pad = span * 0.06
        return cls(low - pad, high + pad, left, right)

    def x(self, moment: datetime) -> float:
        total = (self.end - self.start).total_seconds()
        share = (moment - self.start).total_seconds() / total
        return round(self.left + share * (self.right - self.left), 1)

    def ticks(self, count: int = 4) -> list[tuple[float, str]]:
        """Evenly spaced labels, as fine as the span needs (dates, hours or seconds), in
        the active time zone (the tenant's on every dashboard page), like the tables."""
        step = (self.end - self.start) / count
        span = self.end - self.start
        fmt = "%Y-%m-%d"
        if span < timedelta(hours=2):
            fmt = "%H:%M:%S"
        elif span < timedelta(days=3):
            fmt = "%d %b %H:%M"
        moments = [self.start + step * i for i in range(count + 1)]
        return [(self.x(moment), timezone.localtime(moment).strftime(fmt)) for moment in moments]
