import re
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks
from django.db.backends.signals import connection_created

from core.checks import site_url_set


def statement_timeout_on_connect(sender: Any, connection: Any, **kwargs: Any) -> None:
    """``MEMGOV_DB_STATEMENT_TIMEOUT`` (config/settings.py) as a session setting of each new
    PostgreSQL connection: a ``SET`` after connecting, not a startup option, because a
    PgBouncer refuses startup options it does not know. Not behind a transaction-mode
    pooler, where a session setting would leak to other clients (set it on the role)."""
    timeout = getattr(settings, "DB_STATEMENT_TIMEOUT", "0")
    if connection.vendor != "postgresql" or getattr(settings, "DB_POOL_MODE", "") != "session":
        return
    if not int(re.sub(r"\D", "", timeout) or 0):
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('statement_timeout', %s, false)", [timeout])


class CoreConfig(AppConfig):
    name = "core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported in ready(): core.outbox uses models, which are loaded only now.
        from core.metrics import scrape_reader  # noqa: PLC0415
        from core.outbox import outbox_gauges  # noqa: PLC0415

        checks.register(site_url_set)
        scrape_reader("core.outbox", outbox_gauges)
        connection_created.connect(
            statement_timeout_on_connect, dispatch_uid="core.statement_timeout"
        )
