"""A Celery worker whose gate runs pause after writing their results and before they
commit (crash tests only): ``python -m tests.integration.slow_worker SECONDS worker …``.
Killing it inside the pause loses an uncommitted run, which the sweeper must recover."""

from __future__ import annotations

import logging
import os
import sys
import time
from datetime import datetime
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from approvals import checking  # noqa: E402 - needs django.setup()
from config.celery import app  # noqa: E402 - needs django.setup()

logger = logging.getLogger(__name__)
PAUSED = "slow gate run pauses before commit"
_record = checking.record_results


def main() -> None:
    delay = float(sys.argv[1])

    def slow_record(
        version: Any, run: str, policy_version: str, now: datetime, outcomes: list[Any]
    ) -> Any:
        results = _record(version, run, policy_version, now, outcomes)
        if run == "gate":
            logger.warning("%s: %s s", PAUSED, delay)
            time.sleep(delay)
        return results

    checking.record_results = slow_record
    app.worker_main(sys.argv[2:])


if __name__ == "__main__":
    main()
