from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.tenancy import tenant_create, tenant_settings_check, tenant_update_settings
from core.errors import DomainError
from core.models import Tenant


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
        parser.add_argument(
            "--time-zone",
            default=None,
            help="IANA zone for times shown to people, e.g. Europe/Berlin (default UTC)",
        )
        parser.add_argument(
            "--update",
            action="store_true",
            help="change the settings of an existing tenant instead of creating one",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["slug"]
        existing = Tenant.objects.filter(slug=slug).first()
        if existing is not None and not options["update"]:
            raise CommandError(f"tenant {slug!r} already exists (--update changes its settings)")
        if existing is None and options["update"]:
            raise CommandError(f"no tenant {slug!r} to update")
        settings = {
            "approvals_required": options["approvals_required"],
            "revalidation_failure": options["revalidation_failure"],
            "time_zone": options["time_zone"],
        }
        try:
            tenant_settings_check(**settings)  # refused settings create no tenant
            tenant = existing or tenant_create(slug=slug, name=options["name"])
            tenant = tenant_update_settings(tenant=tenant, **settings)
        except DomainError as exc:
            raise CommandError(str(exc.detail)) from exc
        done = "updated" if existing else "created"
        self.stdout.write(f"{done} tenant {tenant.slug} (times shown in {tenant.time_zone})")
