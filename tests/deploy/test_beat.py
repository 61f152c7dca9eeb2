"""Issue 36, point 2: real ``celery beat`` processes on the test broker. A restart, with a
fresh and empty /tmp as a new pod has, keeps the daily schedule: a task last sent 24 h
ago is sent at once and not again after the restart. A second beat sends nothing
twice; it stands by and takes over when the first stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
from django.conf import settings

from operations.beat import LEASE_KEY, STATE_KEY
from tests.conftest import needs
from tests.deploy.live import Relay, wait_for
from tests.deploy.support import ROOT
from tests.integration.test_workflow_worker import _test_database_url

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]

RETENTION = "approvals.tasks.apply_retention"
REMINDERS = "approvals.tasks.remind_pending_and_expiring"
LEASE_SECONDS = 6


@pytest.fixture
def broker() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(str(settings.CELERY_BROKER_URL), decode_responses=True)
    client.delete("celery", STATE_KEY, LEASE_KEY)
    yield client
    client.delete("celery", STATE_KEY, LEASE_KEY)
    client.close()


def sent(broker: redis.Redis, task: str) -> int:
    """Messages for ``task`` waiting in the default queue (no worker takes them here)."""
    return sum(json.loads(m)["headers"]["task"] == task for m in broker.lrange("celery", 0, -1))


class Beat:
    def __init__(self, var_dir: Path, **env: str) -> None:
        var_dir.mkdir(parents=True)  # a new pod's /tmp: nothing from a previous beat
        self.log = var_dir / "beat.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO"],
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={
                    **os.environ,
                    "DATABASE_URL": _test_database_url(),
                    "SECRET_KEY": "test-only-secret-key-for-beat",
                    "MEMGOV_VAR_DIR": str(var_dir),
                    "MEMGOV_BEAT_LEASE_SECONDS": str(LEASE_SECONDS),
                    **env,
                },
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def says(self, text: str) -> bool:
        assert self.process.poll() is None, self.output()
        return text in self.output()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)


@pytest.fixture
def beats(tmp_path: Path) -> Iterator[list[Beat]]:
    started: list[Beat] = []
    yield started
    for beat in started:
        beat.stop()


def _last_run(broker: redis.Redis, name: str) -> datetime:
    return datetime.fromisoformat(str(broker.hget(STATE_KEY, name)))


def test_a_restarted_beat_keeps_the_daily_schedule(broker, beats, tmp_path):
    now = datetime.now(UTC)
    # Retention last ran 24 h ago less 3 s; the reminders have just run.
    broker.hset(STATE_KEY, "apply-retention", (now - timedelta(hours=24, seconds=-3)).isoformat())
    broker.hset(STATE_KEY, "remind-pending-and-expiring", now.isoformat())
    first = Beat(tmp_path / "first")
    beats.append(first)

    wait_for("retention to be sent", lambda: sent(broker, RETENTION) == 1, timeout=60)
    first.stop()
    second = Beat(tmp_path / "second")
    beats.append(second)
    wait_for("the second beat to lead", lambda: second.says("takes the lease"), timeout=60)
    wait_for("a tick after the restart", lambda: second.says("beat: Starting"), timeout=5)

    # Not sent again, and the reminders' 24 h wait was not restarted either.
    assert sent(broker, RETENTION) == 1
    assert sent(broker, REMINDERS) == 0
    assert datetime.now(UTC) - _last_run(broker, "apply-retention") < timedelta(minutes=2)
    assert _last_run(broker, "remind-pending-and-expiring") == now


def test_a_second_beat_stands_by_and_takes_over_when_the_first_stops(broker, beats, tmp_path):
    due = datetime.now(UTC) - timedelta(hours=24, seconds=-4)
    broker.hset(STATE_KEY, "apply-retention", due.isoformat())
    one, two = Beat(tmp_path / "one"), Beat(tmp_path / "two")
    beats.extend([one, two])
    wait_for("both to start", lambda: one.says("beat: Starting") and two.says("beat: Starting"))
    wait_for("retention to be sent", lambda: sent(broker, RETENTION) >= 1, timeout=60)
    wait_for("one beat to stand by", lambda: "stands by" in one.output() + two.output())

    assert sent(broker, RETENTION) == 1
    leader, standby = (
        (one, two) if f":{one.process.pid}:" in str(broker.get(LEASE_KEY)) else (two, one)
    )
    assert "stands by" in standby.output()
    assert "takes the lease" not in standby.output()

    leader.stop()  # releases the lease on the way out
    wait_for(
        "the standby to lead", lambda: standby.says("takes the lease"), timeout=LEASE_SECONDS * 3
    )
    assert sent(broker, RETENTION) == 1  # it read what the first one sent


def test_a_beat_cut_off_from_redis_says_so_once_and_blames_no_other_beat(broker, beats, tmp_path):
    """Issue 47, point 8: during a Redis outage beat said "another beat holds the lease"
    and logged a traceback every tick."""
    target = urlsplit(str(settings.CELERY_BROKER_URL))
    relay = Relay((target.hostname or "127.0.0.1", target.port or 6379))
    through_relay = target._replace(netloc=f"127.0.0.1:{relay.port}").geturl()
    try:
        beat = Beat(tmp_path / "beat", CELERY_BROKER_URL=through_relay)
        beats.append(beat)
        wait_for("the beat to lead", lambda: beat.says("takes the lease"), timeout=60)

        relay.cut()
        wait_for("the outage line", lambda: beat.says("Redis unreachable"), timeout=30)
        time.sleep(LEASE_SECONDS)  # three more ticks in the outage

        log = beat.output()
        assert log.count("Redis unreachable") == 1, log
        assert "another beat holds the lease" not in log
        assert "Traceback" not in log

        relay.mend()
        wait_for("Redis to answer", lambda: beat.says("Redis answers again"), timeout=30)
        wait_for("it to lead again", lambda: beat.output().count("takes the lease") == 2)
        assert "another beat holds the lease" not in beat.output()
    finally:
        for started in beats:
            started.stop()
        relay.close()


def test_a_beat_started_while_redis_is_down_says_so_in_one_line_each(beats, tmp_path):
    """Issue 47 follow-up, point 4: beat started while Redis refused logged "last runs
    unreadable" and, twice on the way out, "lease not released", each with a 2.7 KB
    traceback."""
    relay = Relay(("127.0.0.1", 9))  # stands for a stopped Redis: refused below
    relay.cut(refuse=True)
    target = urlsplit(str(settings.CELERY_BROKER_URL))
    try:
        beat = Beat(
            tmp_path / "beat",
            CELERY_BROKER_URL=target._replace(netloc=f"127.0.0.1:{relay.port}").geturl(),
        )
        beats.append(beat)
        wait_for("the outage line", lambda: beat.says("Redis unreachable"), timeout=60)
        beat.stop()

        log = beat.output()
        assert "Traceback" not in log
        unreadable = [line for line in log.splitlines() if "last runs unreadable" in line]
        assert len(unreadable) == 1, log
        assert "ConnectionError: Error 111 connecting to" in unreadable[0]
        assert "lease not released" not in log  # it never held one
    finally:
        relay.close()
