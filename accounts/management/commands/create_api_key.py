from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.tenancy import api_key_create
from core.models import Tenant

LIFETIME_RE = re.compile(r"^(?P<count>[1-9][0-9]{0,5})(?P<unit>[dh])$")


def parse_lifetime(raw: str) -> timedelta:
    """``90d`` or ``12h``: a key that expires is a smaller leak than one that never does."""
    match = LIFETIME_RE.match(raw.strip())
    if match is None:
        raise CommandError(f"--expires-in {raw!r}: expected a number of days or hours, e.g. 90d")
    unit = "days" if match["unit"] == "d" else "hours"
    return timedelta(**{unit: int(match["count"])})


class Command(BaseCommand):
    help = "Create an API key; the key is printed alone on the last line and never stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--agent")
        who.add_argument("--user")
        parser.add_argument("--labels", default="", help="agent keys only, e.g. staff,finance")
        parser.add_argument(
            "--expires-in", default=None, help="lifetime, e.g. 90d or 12h; default: never"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        lifetime = parse_lifetime(options["expires_in"]) if options["expires_in"] else None
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant {options['tenant']!r}")
        labels = [label.strip() for label in options["labels"].split(",") if label.strip()]
        user = None
        if options["user"]:
            user = (
                get_user_model()
                .objects.filter(username=options["user"], membership__tenant=tenant)
                .first()
            )
            if user is None:
                raise CommandError(f"no user {options['user']!r} in tenant {tenant.slug}")
            if labels:
                raise CommandError(
                    "--labels is for agent keys: a person's key carries the person's "
                    "current labels (their membership), read on every request"
                )
        _, raw = api_key_create(
            tenant=tenant,
            agent_name=options["agent"] or "",
            user=user,
            labels=labels,
            expires_in=lifetime,
        )
        self.stdout.write(raw)
