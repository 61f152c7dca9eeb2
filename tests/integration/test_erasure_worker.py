"""Erasure with real components (issue 12): PostgreSQL, the Redis broker and cache, and
Celery workers — one embedded, and one started as a process and killed with SIGKILL in
the middle of an erasure of 2,000 versions, which a restarted worker finishes with exact
counts. A live webhook receiver gets nothing about her once the erasure is done, not even
a retry of an event written before it (issue 33, point 11)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django_redis import get_redis_connection

from approvals import tasks
from audit.models import AuditEvent
from audit.selectors import audit_verify
from bench.erasure_bench import build_subject
from core.principals import principal_for_user
from memory import events
from memory.erasure import erasure_start
from memory.models import Erasure, MemoryVersion, RetrievalRecord, Source
from tests.approvals.support import Flow
from tests.conftest import World, needs
from tests.erasure import story
from tests.erasure.story import NEEDLES, P9, build, eraser, scan_database, scan_redis
from tests.integration.slow_erasure_worker import PAUSED
from tests.integration.test_workflow_worker import (
    PATIENCE,
    ROOT,
    _test_database_url,
    broker,  # noqa: F401 - a fixture
    embedded_worker,
    wait_for,
)
from tests.webhooks.receiver import live_receiver
from tests.webhooks.support import create_webhook, webhook_manager

pytestmark = [
    needs("redis"),
    needs("postgres"),
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
]

VERSIONS, SOURCES, BATCH = 2000, 400, 100


@pytest.fixture
def flow(world: World, broker: None) -> Flow:  # noqa: F811 - the fixture above
    get_redis_connection("default").flushdb()  # our cache database: the scan starts empty
    flow = Flow(world=world)
    eraser(flow)
    return flow


def test_with_a_real_worker_nothing_about_her_is_left_in_any_column_or_in_redis(
    flow: Flow, settings: Any
):
    settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE = True  # the receiver is on loopback
    settings.MEMGOV_WEBHOOK_RETRY_BASE_SECONDS = 0.2
    with embedded_worker(), live_receiver() as receiver:
        tale = build(
            flow,
            settle=lambda memory_id: wait_for(
                "the gate run", lambda: flow.memory(memory_id)["status"] == "active"
            ),
        )
        # What people wrote about her in passing; the receiver refuses the retirements,
        # so the one naming her is retried until after the erasure.
        webhook_manager(flow)
        hook = create_webhook(flow, receiver.url, *events.EVENT_TYPES)
        receiver.secrets.append(hook["secret"])
        receiver.refuse_type = "memory.retired"
        story.tell_in_free_text(flow, tale)
        wait_for(
            "the refused retirement",
            lambda: any(story.RETIREMENT in r.body.decode() for r in receiver.all()),
        )
        document = flow.get("erin", f"/entities/{tale.subject}/export")
        exported = b"".join(document.streaming_content).decode()
        assert all(needle in exported for needle in NEEDLES)

        body = flow.ok(
            flow.post("erin", f"/entities/{tale.subject}/erase", {"reason": "Art. 17"}), 202
        )
        path = f"/erasures/{body['erasure']}"
        wait_for("the erasure", lambda: flow.ok(flow.get("erin", path))["status"] == "done")
        finished = len(receiver.all())
        receiver.refuse_type = ""
        wait_for(
            "the retirement sent again",
            lambda: any(
                r.event["type"] == "memory.retired"
                and r.event["data"]["memory_id"] == tale.memories[2]
                for r in receiver.all()[finished:]
                if r.answered == 200
            ),
        )

    resent = [r.body.decode() for r in receiver.all()[finished:]]
    assert not [text for text in resent if any(n in text for n in NEEDLES)]
    job = flow.ok(flow.get("erin", path))
    assert job["counts"]["versions"] == 5
    assert job["counts"]["webhook_deliveries"] >= 3
    assert job["kept"] == [{"source": tale.shared_source, "also_cited_for": [tale.other]}]
    tables, found = scan_database(NEEDLES)
    print(f"\ncolumn scan: {tables} tables (information_schema), found: {found}")
    assert found == []
    assert tables >= 30
    assert scan_redis(get_redis_connection("default"), NEEDLES) == []
    assert audit_verify(tenant=flow.world.tenant).ok
    response = flow.post("agent", "/resolve", {"subject": tale.subject, "context": P9})
    assert response.status_code == 410


def _worker_process(log: Path, pause: float) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": _test_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "CACHE_URL": settings.CACHE_URL,
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "MEMGOV_ERASURE_BATCH": str(BATCH),
        "EMAIL_URL": "dummy://",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    command = [
        *(sys.executable, "-m", "tests.integration.slow_erasure_worker", str(pause), "worker"),
        *("--pool=solo", "--concurrency=1", "--loglevel=INFO"),
        *("--without-mingle", "--without-gossip"),
        *("-n", f"doomed-eraser-{uuid.uuid4().hex[:8]}@%h"),
    ]
    with log.open("wb") as out:
        return subprocess.Popen(  # noqa: S603 - our own worker, fixed arguments
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def test_a_worker_killed_in_the_middle_of_an_erasure_of_2000_versions_is_finished_exactly(
    flow: Flow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any
):
    # Given a subject with 2,000 versions in 400 lineages citing 400 sources.
    officer = flow.world.users["erin"]
    subject = build_subject(
        tenant=flow.world.tenant, owner=officer, versions=VERSIONS, sources=SOURCES
    )
    principal = principal_for_user(officer)
    assert principal is not None
    erasure = erasure_start(principal=principal, subject_id=subject, reason="Art. 17")
    assert erasure.counts["items_retired"] == VERSIONS // 5

    # When a worker erases in batches of 100, pausing inside each batch's transaction, and
    # is killed with SIGKILL while the fifth batch is changed but not committed.
    log = tmp_path / "worker.log"
    worker = _worker_process(log, pause=1.0)
    try:
        wait_for("five batches", lambda: log.read_text().count(PAUSED) >= 5, PATIENCE)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
    assert worker.returncode == -signal.SIGKILL

    # Then what was committed and what was counted agree, and it is not finished.
    halfway = Erasure.objects.get(pk=erasure.pk)
    erased = MemoryVersion.objects.filter(subject_id=subject, erased_at__isnull=False).count()
    assert halfway.status == "running"
    assert halfway.counts["versions"] == erased
    assert 0 < erased < VERSIONS

    # When the sweeper finds it stalled and a healthy worker takes it up.
    settings.MEMGOV_ERASURE_BATCH = BATCH
    monkeypatch.setattr(tasks, "ERASURE_STALLED_AFTER", timedelta(0))
    assert tasks.resume_stalled_erasures() == [erasure.pk]
    with embedded_worker():
        wait_for(
            "the erasure",
            lambda: Erasure.objects.get(pk=erasure.pk).status == "done",
            PATIENCE * 2,
        )

    # Then every count is exact: nothing missed, nothing counted twice.
    done = Erasure.objects.get(pk=erasure.pk)
    assert done.counts["versions"] == VERSIONS
    assert done.counts["items_retired"] == VERSIONS // 5
    assert done.counts["sources_purged"] == SOURCES
    assert done.counts["retrieval_records"] == VERSIONS // 5
    assert done.counts["retrieval_uses"] == VERSIONS // 5
    assert MemoryVersion.objects.filter(subject_id=subject, erased_at=None).count() == 0
    assert not Source.objects.filter(content__contains="Bench Person").exists()
    assert not RetrievalRecord.objects.filter(tenant=flow.world.tenant).exists()
    assert AuditEvent.objects.filter(action="subject.erased", target_id=subject).count() == 1
    assert audit_verify(tenant=flow.world.tenant).ok
