"""``config.wsgi`` whose resolve-cache writes wait three seconds first (tests only): it
widens the window between a slow reader's database read and its cache write, so the
live-invalidation test can commit a retirement inside it."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from config.wsgi import application
from memory import generations

DELAY_SECONDS = 3.0
_store = generations._store


def _slow_store(key: str, body: dict[str, Any], next_change: datetime | None) -> None:
    time.sleep(DELAY_SECONDS)
    _store(key, body, next_change)


generations._store = _slow_store
__all__ = ["application"]
