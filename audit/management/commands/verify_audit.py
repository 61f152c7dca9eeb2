from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.selectors import audit_verify
from core.models import Tenant


class Command(BaseCommand):
    help = "Verify every tenant's audit hash chain (or one); exit 1 at the first broken link."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        tenants = Tenant.objects.order_by("slug")
        if options["tenant"]:
            tenants = tenants.filter(slug=options["tenant"])
            if not tenants.exists():
                raise CommandError(f"no tenant {options['tenant']!r}")
        broken = []
        for tenant in tenants:
            result = audit_verify(tenant=tenant)
            if result.ok:
                self.stdout.write(f"{tenant.slug}: ok, {result.events_checked} events checked")
            else:
                broken.append(tenant.slug)
                self.stdout.write(
                    f"{tenant.slug}: BROKEN at seq {result.first_bad_seq} "
                    f"({result.events_checked} events verified before it)"
                )
        if broken:
            raise CommandError(f"audit chain broken for: {', '.join(broken)}")
