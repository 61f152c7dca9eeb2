from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.tenancy import api_key_revoke
from core.models import ApiKey


class Command(BaseCommand):
    help = "Revoke an API key by its lookup prefix (with or without its 'mg_')."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("prefix")

    def handle(self, *args: Any, **options: Any) -> None:
        # As printed by create_api_key ("mg_<prefix>_…") or after the "mg_": both.
        key = ApiKey.objects.filter(prefix=options["prefix"].removeprefix("mg_")).first()
        if key is None:
            raise CommandError(f"no API key with prefix {options['prefix']!r}")
        api_key_revoke(key=key)
        self.stdout.write(f"revoked {key.prefix}")
