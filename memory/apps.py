from typing import Any

from django.apps import AppConfig
from django.db import connections
from django.db.models.signals import post_migrate

from memory import fulltext


def _keep_fulltext(sender: Any, using: str = "default", **_kwargs: Any) -> None:
    """SQLite loses FTS5 triggers when Django rebuilds a table: put them back after each
    migrate (memory.fulltext)."""
    connection = connections[using]
    if connection.vendor == "sqlite":
        fulltext.ensure_sqlite(connection)


class MemoryConfig(AppConfig):
    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_keep_fulltext, sender=self, dispatch_uid="memory.fulltext")
