from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.selectors import ChainVerification, Problem, audit_verify
from core.models import Tenant

_WHY = {
    Problem.LINK: "an event is missing, added or out of place",
    Problem.HASH: "this event no longer matches its hash",
    Problem.HEAD: "the chain does not end where its head says",
    Problem.UNBOUND: "unkeyed events after keying, with no keyed event after them",
    Problem.SEAL: "the head's seal does not prove where keying starts",
}


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
        failed = []
        for tenant in tenants:
            result = audit_verify(tenant=tenant)
            if result.ok:
                self.stdout.write(f"{tenant.slug}: ok, {result.events_checked} events checked")
            else:
                failed.append(tenant.slug)
                self.stdout.write(f"{tenant.slug}: {_verdict(result)}")
        if failed:
            raise CommandError(f"audit chain broken or unverifiable for: {', '.join(failed)}")


def _verdict(result: ChainVerification) -> str:
    missing = ", ".join(result.missing_key_ids)
    if result.reason is Problem.KEY_MISSING:
        return (
            f"CANNOT VERIFY: key {missing} not configured (MEMGOV_AUDIT_KEYS or "
            f"SECRET_KEY_FALLBACKS); {result.events_checked} events walked, no tampering found"
            " in what could be checked"
        )
    why = _WHY[result.reason] if result.reason else "broken"
    line = (
        f"BROKEN at seq {result.first_bad_seq}: {why} "
        f"({result.events_checked} events verified before it)"
    )
    return line + (f"; key {missing} not configured" if missing else "")
