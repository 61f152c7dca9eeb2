from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import Conflict
from core.models import ApiKey
from memory.people import api_key_rotate


class Command(BaseCommand):
    help = (
        "Replace an API key (by its lookup prefix, the part after 'mg_') with a new one for "
        "the same principal, labels and lifetime, revoking the old; the new key is printed "
        "alone on the last line and never stored."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("prefix")

    def handle(self, *args: Any, **options: Any) -> None:
        key = ApiKey.objects.filter(prefix=options["prefix"]).first()
        if key is None:
            raise CommandError(f"no API key with prefix {options['prefix']!r}")
        try:
            new, raw = api_key_rotate(key=key)
        except Conflict as exc:
            raise CommandError(exc.detail) from exc
        self.stdout.write(f"revoked {key.prefix}, new key {new.prefix}")
        self.stdout.write(raw)
