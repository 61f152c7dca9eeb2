"""Issue 36, point 6: the rolling restart of docs/operations.md under a small load, with
zero failed requests. As Kubernetes does it (maxSurge 1, maxUnavailable 0, preStop): the
new server starts beside the old one, takes traffic once its /readyz passes, the old one
is taken out of rotation, and only after the preStop pause gets SIGTERM, finishing what
it holds. (``kill -HUP`` in place is not hitless; the document says not to use it.)"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings

from tests.conftest import World, needs
from tests.deploy.live import Gunicorn, get
from tests.integration.test_workflow_worker import _test_database_url

pytestmark = [needs("postgres"), needs("redis"), pytest.mark.django_db(transaction=True)]
PRE_STOP = 1.0  # seconds between leaving the rotation and SIGTERM (web.yaml: 5)


def test_a_rolling_restart_under_load_fails_no_request(world: World, tmp_path: Path):
    env = {
        "DATABASE_URL": _test_database_url(),
        "REDIS_URL": str(settings.REDIS_URL),
        "CACHE_URL": str(settings.CACHE_URL),
        "CELERY_BROKER_URL": str(settings.CELERY_BROKER_URL),
    }
    auth = {"Authorization": f"Bearer {world.keys['agent']}"}
    old = Gunicorn(tmp_path / "old.log", env, "--workers=1", "--threads=4")
    rotation = [old]
    answers: list[int | str] = []
    stop = threading.Event()

    def client() -> None:
        while not stop.is_set():
            try:
                answers.append(get(f"{rotation[0].base}/api/v1/memories", 30, auth)[0])
            except OSError as exc:
                answers.append(type(exc).__name__)

    clients = [threading.Thread(target=client) for _ in range(3)]
    for each in clients:
        each.start()
    try:
        time.sleep(2)
        new = Gunicorn(tmp_path / "new.log", env, "--workers=1", "--threads=4")
        assert get(f"{new.probes}/readyz", 5)[0] == 200
        rotation[0] = new  # the Service's endpoints change
        time.sleep(PRE_STOP)
        old.signal(signal.SIGTERM)
        assert old.process.wait(timeout=40) == 0  # a graceful exit
        time.sleep(2)
    finally:
        stop.set()
        for each in clients:
            each.join(60)
        old.stop()
        if rotation[0] is not old:
            rotation[0].stop()

    assert len(answers) > 30
    assert set(answers) == {200}, [a for a in answers if a != 200][:5]
