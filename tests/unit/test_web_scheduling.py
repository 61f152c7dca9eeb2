"""The web server's request threads run under SCHED_BATCH (config.processes, issue 14):
without wakeup preemption between them, a thread whose reply arrived does not preempt its
own process's GIL holder only to block on the GIL. Checked in a fresh interpreter that
loads the application as a server does, then starts a thread as a server's pool would."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getscheduler"), reason="scheduling policies are Linux's"
)

# Starts as a server started from a shell does (the default policy, not this test
# process's, which may have loaded the application), loads an application module, then
# reports the policy of this thread and of a new one.
PROBE = """
import importlib, json, os, sys, threading
os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
importlib.import_module(sys.argv[1])
seen = {"loader": os.sched_getscheduler(0)}
worker = threading.Thread(target=lambda: seen.update(request=os.sched_getscheduler(0)))
worker.start()
worker.join()
print(json.dumps(seen))
"""


def _policies(module: str, **env: str) -> dict[str, int]:
    done = subprocess.run(  # noqa: S603 - our own application modules, in a fresh process
        [sys.executable, "-c", PROBE, module],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("module", ["config.wsgi", "config.asgi"])
def test_request_threads_started_after_the_application_loads_run_as_batch(module: str) -> None:
    assert _policies(module) == {"loader": os.SCHED_BATCH, "request": os.SCHED_BATCH}


def test_the_default_policy_stays_when_turned_off() -> None:
    policies = _policies("config.wsgi", MEMGOV_WEB_SCHED_BATCH="false")
    assert policies == {"loader": os.SCHED_OTHER, "request": os.SCHED_OTHER}
