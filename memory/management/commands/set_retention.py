from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import InvalidContent
from core.models import Tenant
from memory.retention import SETTINGS, retention_set


def _days(text: str) -> int | None:
    """A number of days, or ``never`` (keep forever)."""
    if text.strip().lower() in ("never", "none", ""):
        return None
    try:
        return int(text)
    except ValueError as exc:
        raise CommandError(f"{text!r} is not a number of days (or 'never')") from exc


class Command(BaseCommand):
    help = (
        "Set a tenant's retention (audited): days to keep source content, retrieval records "
        "and the values of retired or expired versions; 'never' keeps forever."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        for name in SETTINGS:
            parser.add_argument(f"--{name.replace('_', '-')}", dest=name, metavar="DAYS|never")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant {options['tenant']!r}")
        given = {name: _days(options[name]) for name in SETTINGS if options[name] is not None}
        if not given:
            flags = ", ".join("--" + name.replace("_", "-") for name in SETTINGS)
            raise CommandError(f"give at least one of {flags}")
        try:
            tenant = retention_set(tenant=tenant, days=given)
        except InvalidContent as exc:
            raise CommandError(exc.detail) from exc
        for name in SETTINGS:
            value = getattr(tenant, name)
            self.stdout.write(f"{name}: {'never' if value is None else value}")
