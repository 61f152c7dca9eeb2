"""System checks (``manage.py check``, and before ``migrate``) for settings that would
run, but wrongly."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage
from django.core.checks import Warning as CheckWarning


def site_url_set(app_configs: Any = None, **_: Any) -> list[CheckMessage]:
    """Outside DEBUG, links in emails and in operator commands' output come from SITE_URL:
    a guess (gunicorn's address, or 127.0.0.1:8000) is wrong behind any proxy."""
    if settings.DEBUG or not settings.SITE_URL_GUESSED:
        return []
    return [
        CheckWarning(
            f"SITE_URL is not set: emails and operator commands link to {settings.SITE_URL}",
            hint="Set SITE_URL to the address people open, e.g. https://memgov.example.com",
            id="memgov.W001",
        )
    ]
