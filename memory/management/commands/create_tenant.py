from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.models import Tenant
from memory.tenancy import tenant_create, tenant_update_settings


class Command(BaseCommand):
    help = "Create a tenant with its initial policy (settings changes are audited)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--approvals-required", type=int, default=None)
        parser.add_argument(
            "--revalidation-failure",
            choices=Tenant.RevalidationFailure.values,
            default=None,
            help="suspend (default): an item failing revalidation leaves use; flag: listed only",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["slug"]
        if Tenant.objects.filter(slug=slug).exists():
            raise CommandError(f"tenant {slug!r} already exists")
        tenant = tenant_create(slug=slug, name=options["name"])
        tenant_update_settings(
            tenant=tenant,
            approvals_required=options["approvals_required"],
            revalidation_failure=options["revalidation_failure"],
        )
        self.stdout.write(f"created tenant {tenant.slug}")
