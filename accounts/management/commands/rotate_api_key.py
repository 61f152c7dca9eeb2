from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.people import api_key_rotate
from core.errors import Conflict
from core.models import ApiKey
from core.times import iso


class Command(BaseCommand):
    help = (
        "Replace an API key (by its lookup prefix, with or without its 'mg_') with a new one for "
        "the same principal, labels and lifetime, revoking the old (or, with --overlap, "
        "letting it expire after that many seconds); the new key is printed alone on the "
        "last line and never stored."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("prefix")
        parser.add_argument(
            "--overlap",
            type=int,
            default=0,
            metavar="SECONDS",
            help="the old key keeps working this long, then expires; default 0: revoked now",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # As printed by create_api_key ("mg_<prefix>_…") or after the "mg_": both.
        key = ApiKey.objects.filter(prefix=options["prefix"].removeprefix("mg_")).first()
        if key is None:
            raise CommandError(f"no API key with prefix {options['prefix']!r}")
        if options["overlap"] < 0:
            raise CommandError("--overlap: expected a number of seconds, 0 or more")
        try:
            new, raw = api_key_rotate(key=key, overlap=timedelta(seconds=options["overlap"]))
        except Conflict as exc:
            raise CommandError(exc.detail) from exc
        if options["overlap"]:
            old = ApiKey.objects.get(pk=key.pk)
            self.stdout.write(
                f"{key.prefix} works until {iso(old.expires_at)}, new key {new.prefix}"
            )
        else:
            self.stdout.write(f"revoked {key.prefix}, new key {new.prefix}")
        self.stdout.write(raw)
