"""Celery beat's schedule state in the broker's Redis, and a lock so one beat sends.

Beat kept when each periodic task last ran in a file under /tmp (an emptyDir, a tmpfs):
every restart forgot it, so a daily task waited another 24 h after each rollout and
``apply-retention`` or the reminders might never run (issue 36). Here each entry's last
run is written to a Redis hash when beat sends it, and read back when beat starts or takes
over, so a restart resumes the wait instead of restarting it; an entry that never ran
counts from when a beat first saw it. The daily tasks run at a time of day (crontab in
settings), so a time passed while beat was down is sent once when it returns (issue 47).
The broker's Redis holds it: queued tasks already depend on that Redis being durable
(appendonly), and a restore drill flushes the cache's database, never the broker's
(docs/operations.md).

A second beat (a rollout that overlaps, a scaled Deployment, two ``make prod``) is
harmless: only the holder of a lease (``SET NX`` with a TTL, renewed every tick) sends;
the other waits, ticking, and takes over when the lease lapses. Both touch a heartbeat
file each tick, which the container's liveness probe reads."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from celery.beat import ScheduleEntry, Scheduler
from django.conf import settings
from redis import Redis
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

STATE_KEY = "memgov:beat:last-run"
LEASE_KEY = "memgov:beat:lease"
# Take the lease when it is free, renew it when it is ours; 1 while we hold it.
_LEASE = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _aware(when: datetime | None) -> datetime:
    when = when or datetime.now(UTC)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _said(exc: Exception) -> str:
    """A Redis error in one line (its type and first line): an outage is not a bug, and a
    traceback each time made 2.7 KB of each of beat's lines (issue 47)."""
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"


def heartbeat_path() -> Path:
    return Path(settings.VAR_DIR) / "beat-heartbeat"


class RedisScheduler(Scheduler):
    """The configured schedule, its last runs in Redis, sent by the lease's holder only."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.lease_seconds = max(3, int(settings.MEMGOV_BEAT_LEASE_SECONDS))
        self.identity = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.redis = Redis.from_url(
            str(settings.CELERY_BROKER_URL),
            socket_timeout=2,
            socket_connect_timeout=2,
            decode_responses=True,
        )
        self.leading: bool | None = None  # None: not known yet (logged once either way)
        self.redis_answers = True  # False during an outage, logged once when it starts
        super().__init__(*args, **kwargs)
        # Tick often enough to renew the lease well before it lapses.
        self.max_interval = min(int(self.max_interval or 300), max(1, self.lease_seconds // 3))

    def setup_schedule(self) -> None:
        self.install_default_entries(self.schedule)
        self.merge_inplace(self.app.conf.beat_schedule)
        self._restore()

    def _restore(self) -> None:
        """Each entry's last run as stored (when beat last sent it), not "now"."""
        try:
            stored = self.redis.hgetall(STATE_KEY)
        except RedisError as exc:
            logger.warning("beat: last runs unreadable (%s); entries start from now", _said(exc))
            return
        for name, when in stored.items():
            entry = self.schedule.get(str(name))
            if entry is not None:
                entry.last_run_at = datetime.fromisoformat(str(when))
        self._heap = None  # ordered again by the restored times
        # An entry that never ran counts from when a beat first saw it, not from each
        # start: a daily time passed while beat was down is then caught up once (issue 47).
        for name, entry in self.schedule.items():
            if name not in stored:
                try:
                    self.redis.hsetnx(STATE_KEY, name, _aware(entry.last_run_at).isoformat())
                except RedisError as exc:
                    logger.warning("beat: could not store %s's first sight (%s)", name, _said(exc))
                    return

    def reserve(self, entry: ScheduleEntry) -> Any:
        """Remember the run before sending it: a beat that dies after sending does not
        send it again on restart (before: at most once more, never 24 h late)."""
        new_entry: Any = super().reserve(entry)
        when = _aware(new_entry.last_run_at)
        try:
            self.redis.hset(STATE_KEY, new_entry.name, when.isoformat())
        except RedisError as exc:
            logger.warning("beat: could not store %s's last run (%s)", entry.name, _said(exc))
        return new_entry

    def _hold_lease(self) -> bool:
        try:
            held = bool(self.redis.eval(_LEASE, 1, LEASE_KEY, self.identity, self.lease_seconds))
        except RedisError as exc:
            # One line an outage, not a traceback a tick; and no other beat is to blame.
            if self.redis_answers:
                logger.warning(
                    "beat: Redis unreachable (%s); %s sends nothing until it answers",
                    _said(exc),
                    self.identity,
                )
            self.redis_answers = False
            self.leading = None  # unknown: the next answer says who leads
            return False
        if not self.redis_answers:
            logger.info("beat: Redis answers again")
            self.redis_answers = True
        if held and not self.leading:
            logger.info("beat: %s takes the lease and sends the schedule", self.identity)
            self._restore()  # what the previous holder sent
        elif not held and self.leading is not False:
            logger.warning("beat: another beat holds the lease; %s stands by", self.identity)
        self.leading = held
        return held

    def tick(self, *args: Any, **kwargs: Any) -> float:
        heartbeat_path().touch()
        if not self._hold_lease():
            return float(self.max_interval or 1)
        return float(super().tick(*args, **kwargs))

    def close(self) -> None:
        super().close()
        # Only a lease this beat last knew it held (beat closes its scheduler twice on the
        # way out; one started while Redis was down never held one).
        if self.leading:
            self.leading = False
            try:
                self.redis.eval(_RELEASE, 1, LEASE_KEY, self.identity)
            except RedisError as exc:
                logger.warning("beat: lease not released (%s); it lapses by itself", _said(exc))
        self.redis.close()

    @property
    def info(self) -> str:
        return f"    . lease: {LEASE_KEY} ({self.lease_seconds} s), last runs: {STATE_KEY}"
