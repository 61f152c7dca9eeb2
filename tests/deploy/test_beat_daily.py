"""Issue 47, point 1: the daily tasks run at their time of day, whatever beat's restarts.

Before, ``apply-retention`` and the reminders were 24-hour intervals counted from each
beat start until their first run, so a beat restarted every hour never sent them. Here the
real scheduler (operations.beat.RedisScheduler, its last runs in the test broker's Redis)
runs on a controlled clock (the Celery app's ``now``), a new instance for every restart,
and only the sending itself is recorded instead of published."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis
from django.conf import settings

from config.celery import app as celery_app
from operations.beat import LEASE_KEY, STATE_KEY, RedisScheduler
from tests.conftest import needs
from tests.deploy.support import ROOT

pytestmark = [needs("redis")]

DAILY = ("apply-retention", "remind-pending-and-expiring")
STEP = timedelta(minutes=5)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class RecordingScheduler(RedisScheduler):
    """The real scheduler; what it sends is written down rather than published."""

    sent: list[tuple[str, datetime]]

    @property
    def producer(self) -> None:  # type: ignore[override]  # no broker connection needed
        return None

    def apply_entry(self, entry: Any, producer: Any = None) -> None:
        self.sent.append((entry.name, self.app.now()))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock(datetime(2026, 3, 2, 0, 30, tzinfo=UTC))
    monkeypatch.setattr(celery_app, "now", clock)
    return clock


@pytest.fixture
def sent() -> Iterator[list[tuple[str, datetime]]]:
    settings.VAR_DIR.mkdir(parents=True, exist_ok=True)  # the heartbeat file
    broker = redis.Redis.from_url(str(settings.CELERY_BROKER_URL))
    broker.delete(STATE_KEY, LEASE_KEY)
    record: list[tuple[str, datetime]] = []
    RecordingScheduler.sent = record
    yield record
    broker.delete(STATE_KEY, LEASE_KEY)
    broker.close()


class Beat:
    """One beat process's life: started, ticking as its loop does, stopped."""

    def __init__(self) -> None:
        self.scheduler = RecordingScheduler(app=celery_app)

    def tick(self) -> None:
        for _ in range(50):  # one due entry per tick, as beat's loop calls it
            if self.scheduler.tick() > 0:
                return

    def stop(self) -> None:
        self.scheduler.close()


def run(clock: Clock, until: datetime, restart_every: timedelta | None = None) -> None:
    beat = Beat()
    started = clock.now
    while clock.now < until:
        beat.tick()
        clock.now += STEP
        if restart_every is not None and clock.now - started >= restart_every:
            beat.stop()
            beat, started = Beat(), clock.now
    beat.stop()


def daily(sent: list[tuple[str, datetime]], name: str) -> list[datetime]:
    return [when for task, when in sent if task == name]


def test_a_beat_restarted_every_hour_for_three_days_runs_each_daily_task_once_a_day(clock, sent):
    run(clock, until=clock.now + timedelta(days=3), restart_every=timedelta(hours=1))

    retention = daily(sent, "apply-retention")
    reminders = daily(sent, "remind-pending-and-expiring")
    assert [when.isoformat() for when in retention] == [
        f"2026-03-0{day}T03:00:00+00:00" for day in (2, 3, 4)
    ]
    assert [when.isoformat() for when in reminders] == [
        f"2026-03-0{day}T08:00:00+00:00" for day in (2, 3, 4)
    ]
    assert sum(task == "expire-due-memory" for task, _ in sent) > 3 * 24 * 10  # the others go on


def test_a_daily_time_missed_while_beat_was_down_runs_once_when_it_returns(clock, sent):
    monday = clock.now.replace(hour=0, minute=0)  # beat first starts at 00:30
    run(clock, until=monday.replace(hour=2))  # never ran retention yet
    clock.now = monday.replace(hour=5)  # down from 02:00 to 05:00, across 03:00
    run(clock, until=monday.replace(hour=20))
    clock.now = monday + timedelta(days=1, hours=6)  # down overnight, across 03:00
    run(clock, until=monday + timedelta(days=2))

    assert daily(sent, "apply-retention") == [
        monday.replace(hour=5),  # caught up once on return
        monday + timedelta(days=1, hours=6),  # caught up once, not once per day missed
    ]
    assert daily(sent, "remind-pending-and-expiring") == [
        monday.replace(hour=8),
        monday + timedelta(days=1, hours=8),  # not due while beat was down: at its time
    ]


def test_the_daily_times_and_their_time_zone_are_settings():
    read = (
        "import django; django.setup(); from config.celery import app; "
        "from django.conf import settings as s; "
        "e = s.CELERY_BEAT_SCHEDULE['apply-retention']['schedule']; "
        "print(app.conf.timezone, sorted(e.hour), sorted(e.minute))"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "1",
        "MEMGOV_SCHEDULE_TIME_ZONE": "Europe/Berlin",
        "MEMGOV_RETENTION_AT": "01:45",
    }
    out = subprocess.run(  # noqa: S603 - our own interpreter and settings
        [sys.executable, "-c", read], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.stdout.split() == ["Europe/Berlin", "[1]", "[45]"], out.stderr
    for name, value in (
        ("MEMGOV_SCHEDULE_TIME_ZONE", "Mars/Olympus"),
        ("MEMGOV_RETENTION_AT", "25:00"),
    ):
        refused = subprocess.run(
            [sys.executable, "-c", "import django; django.setup()"],
            cwd=ROOT,
            env={**env, name: value},
            capture_output=True,
            text=True,
        )
        assert refused.returncode != 0
        assert name in refused.stderr
