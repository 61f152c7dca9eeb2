"""A Celery worker whose erasure batches pause inside their transaction, after changing
the versions and before committing (crash tests only):
``python -m tests.integration.slow_erasure_worker SECONDS worker …``. Killing it inside the
pause loses exactly one uncommitted batch: its changes and its counts together."""

from __future__ import annotations

import logging
import os
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from config.celery import app  # noqa: E402 - needs django.setup()
from memory import erasure_phases  # noqa: E402 - needs django.setup()
from memory.models import Erasure  # noqa: E402 - needs django.setup()

logger = logging.getLogger(__name__)
PAUSED = "erasure batch pauses before commit"
_erase_versions = erasure_phases.STEPS["versions"]


def main() -> None:
    delay = float(sys.argv[1])

    def slow_versions(job: Erasure) -> bool:
        more = _erase_versions(job)
        logger.warning("%s: %s s", PAUSED, delay)
        time.sleep(delay)
        return more

    erasure_phases.STEPS["versions"] = slow_versions
    app.worker_main(sys.argv[2:])


if __name__ == "__main__":
    main()
