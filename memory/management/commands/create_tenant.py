from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.models import Tenant
from memory.services import tenant_create


class Command(BaseCommand):
    help = "Create a tenant with its initial policy."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--approvals-required", type=int, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["slug"]
        if Tenant.objects.filter(slug=slug).exists():
            raise CommandError(f"tenant {slug!r} already exists")
        tenant = tenant_create(slug=slug, name=options["name"])
        if options["approvals_required"] is not None:
            Tenant.objects.filter(pk=tenant.pk).update(
                approvals_required=options["approvals_required"]
            )
        self.stdout.write(f"created tenant {tenant.slug}")
