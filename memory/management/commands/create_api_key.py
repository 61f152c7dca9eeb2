from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.models import Tenant
from memory.services import api_key_create


class Command(BaseCommand):
    help = "Create an API key; the key is printed alone on the last line and never stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--agent")
        who.add_argument("--user")
        parser.add_argument("--labels", default="")

    def handle(self, *args: Any, **options: Any) -> None:
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
            if not labels:
                labels = list(user.membership.labels)
        _, raw = api_key_create(
            tenant=tenant, agent_name=options["agent"] or "", user=user, labels=labels
        )
        self.stdout.write(raw)
