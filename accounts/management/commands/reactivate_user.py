from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from accounts.management.commands._people import member
from accounts.people import user_reactivate


class Command(BaseCommand):
    help = "Reactivate a person in a tenant (audited); it applies from their next request."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--tenant", required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        user = user_reactivate(user=member(options["username"], options["tenant"]))
        self.stdout.write(f"reactivated {user.get_username()} in {options['tenant']}")
