"""Webhook tests post to receivers the test starts on 127.0.0.1, which production refuses
(MEMGOV_WEBHOOK_ALLOW_PRIVATE); retries wait fractions of a second instead of seconds."""

from __future__ import annotations

from typing import Any

import pytest

RETRY_BASE = 0.4


@pytest.fixture(autouse=True)
def _loopback_receivers_and_quick_retries(settings: Any) -> None:
    settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE = True
    settings.MEMGOV_WEBHOOK_RETRY_BASE_SECONDS = RETRY_BASE
