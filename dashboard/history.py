"""A lineage's history for the item page: what changed between versions, and when each
version held in the world (valid time) and was in use by Memgov (system time)."""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from dashboard.charts import TimeScale
from memory.models import MemoryVersion, Status

TIMELINE_WIDTH = 720
LABEL_WIDTH = 110
ROW_HEIGHT = 46
AXIS_HEIGHT = 34
CLOSED = (Status.REJECTED, Status.SUPERSEDED, Status.RETIRED, Status.EXPIRED)


@dataclass(frozen=True)
class DiffRow:
    name: str
    before: str
    after: str
    changed: bool
    words: tuple[tuple[str, str], ...] = ()  # (equal|delete|insert, text) for prose


def _shown(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, datetime):
        # The tenant's zone, which the dashboard activates, named as the tables name it.
        return (
            f"{timezone.localtime(value):%Y-%m-%d %H:%M} ({timezone.get_current_timezone_name()})"
        )
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _content(version: MemoryVersion) -> dict[str, Any]:
    return {
        "statement": version.statement,
        "value": version.value,
        "scope": version.scope,
        "owner": version.owner.get_username(),
        "expires_at": version.expires_at,
        "valid_from": version.valid_from,
        "valid_to": version.valid_to,
        "assertion": version.assertion,
        "sources": version.source_ids,
        "basis": version.basis,
        "visibility": version.visibility,
    }


def word_diff(before: str, after: str) -> tuple[tuple[str, str], ...]:
    old, new = before.split(), after.split()
    parts: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new).get_opcodes():
        if op in ("delete", "replace"):
            parts.append(("delete", " ".join(old[i1:i2])))
        if op in ("insert", "replace"):
            parts.append(("insert", " ".join(new[j1:j2])))
        if op == "equal":
            parts.append(("equal", " ".join(old[i1:i2])))
    return tuple(parts)


def version_diff(previous: MemoryVersion | None, current: MemoryVersion) -> list[DiffRow]:
    """Every content field; ``changed`` marks what a reviewer must look at again (an approval
    never carries over to changed content)."""
    now = _content(current)
    before = _content(previous) if previous is not None else {}
    rows = []
    for name, value in now.items():
        old = before.get(name)
        changed = previous is not None and old != value
        words = word_diff(_shown(old), _shown(value)) if changed and name == "statement" else ()
        rows.append(DiffRow(name, _shown(old), _shown(value), changed, words))
    return rows


@dataclass(frozen=True)
class VersionChange:
    """One step of the lineage, like a pull request: what version ``number`` changed."""

    previous: int
    number: int
    rows: tuple[DiffRow, ...]


def lineage_changes(versions: Sequence[MemoryVersion]) -> list[VersionChange]:
    """Each version against the one before it, newest first, changed fields only."""
    by_number = {v.number: v for v in versions}
    changes = []
    for number in sorted(by_number, reverse=True):
        previous = by_number.get(number - 1)
        if previous is None:
            continue
        rows = tuple(r for r in version_diff(previous, by_number[number]) if r.changed)
        changes.append(VersionChange(previous.number, number, rows))
    return changes


@dataclass(frozen=True)
class Segment:
    x: float
    width: float
    open_start: bool = False
    open_end: bool = False


@dataclass(frozen=True)
class TimelineRow:
    number: int
    status: str
    y: float
    valid: Segment
    waiting: Segment | None
    in_use: Segment | None


@dataclass(frozen=True)
class Timeline:
    width: int
    height: int
    label_width: int
    rows: tuple[TimelineRow, ...]
    ticks: tuple[tuple[float, str], ...]
    now_x: float
    axis_y: float


def _segment(scale: TimeScale, start: datetime | None, end: datetime | None) -> Segment:
    x0 = scale.left if start is None else scale.x(start)
    x1 = scale.right if end is None else scale.x(end)
    return Segment(x0, max(x1 - x0, 2.0), open_start=start is None, open_end=end is None)


def _waiting_until(version: MemoryVersion, now: datetime) -> datetime:
    """A version never activated waited from its recording until it was closed (or now)."""
    if version.activated_at is not None:
        return version.activated_at
    return version.status_changed_at if version.status in CLOSED else now


def lineage_timeline(versions: Sequence[MemoryVersion], now: datetime) -> Timeline:
    moments = [now]
    for v in versions:
        moments += [
            m
            for m in (v.valid_from, v.valid_to, v.recorded_at, v.activated_at, v.deactivated_at)
            if m is not None
        ]
    scale = TimeScale.around(moments, LABEL_WIDTH, TIMELINE_WIDTH - 12)
    rows = []
    for index, v in enumerate(versions):
        in_use = None
        if v.activated_at is not None:
            in_use = _segment(scale, v.activated_at, v.deactivated_at or now)
        rows.append(
            TimelineRow(
                number=v.number,
                status=v.status,
                y=index * ROW_HEIGHT + 8,
                valid=_segment(scale, v.valid_from, v.valid_to),
                waiting=_segment(scale, v.recorded_at, _waiting_until(v, now)),
                in_use=in_use,
            )
        )
    axis_y = len(rows) * ROW_HEIGHT + 8
    return Timeline(
        width=TIMELINE_WIDTH,
        height=int(axis_y + AXIS_HEIGHT),
        label_width=LABEL_WIDTH,
        rows=tuple(rows),
        ticks=tuple(scale.ticks()),
        now_x=scale.x(now),
        axis_y=axis_y,
    )
