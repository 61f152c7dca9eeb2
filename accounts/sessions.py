"""Django's database sessions, their load run once more on a new connection when the
persistent one is found dead (``core.sql.read_reconnecting``): a browser request's first
query, as the key read is an API request's."""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore

from core.sql import read_reconnecting


class SessionStore(DatabaseSessionStore):
    def load(self) -> dict[str, Any]:
        return read_reconnecting(super().load)
