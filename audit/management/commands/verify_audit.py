from __future__ import annotations

import re
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.selectors import ChainVerification, Problem, audit_hash_at, audit_verify
from core.models import Tenant

_WHY = {
    Problem.LINK: "an event is missing, added or out of place",
    Problem.HASH: "this event no longer matches its hash",
    Problem.HEAD: "the chain does not end where its head says",
    Problem.UNBOUND: "unkeyed events after keying, with no keyed event after them",
    Problem.SEAL: "the head's seal does not prove where keying starts",
}
_CHECKPOINT = re.compile(r"(?P<slug>[-a-zA-Z0-9_]+):(?P<seq>[0-9]{1,18}):(?P<hash>[0-9a-f]{64})")


class Command(BaseCommand):
    help = (
        "Verify every tenant's audit hash chain (or one); exit 1 at the first broken link, "
        "a key not configured, or a checkpoint the chain no longer holds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", default=None)
        parser.add_argument(
            "--checkpoint",
            action="append",
            default=[],
            metavar="TENANT:SEQ:HASH",
            help="a checkpoint an earlier run printed, kept outside the database: the chain "
            "must still hold that event with that hash (finds newest events removed "
            "together with the head, and an older database put back).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        checkpoints = _parse_checkpoints(options["checkpoint"])
        tenants = Tenant.objects.order_by("slug")
        if options["tenant"]:
            tenants = tenants.filter(slug=options["tenant"])
            if not tenants.exists():
                raise CommandError(f"no tenant {options['tenant']!r}")
        unknown = {slug for slug, _, _ in checkpoints} - set(
            Tenant.objects.values_list("slug", flat=True)
        )
        if unknown:
            gone = ", ".join(sorted(unknown))
            raise CommandError(f"checkpoints name tenants that are gone: {gone}")
        failed = []
        for tenant in tenants:
            result = audit_verify(tenant=tenant)
            verdict = _verdict(result) if not result.ok else None
            if verdict is None:
                verdict = _checkpoints_held(tenant, result, checkpoints)
            if verdict is None:
                self.stdout.write(
                    f"{tenant.slug}: ok, {result.events_checked} events checked; "
                    f"checkpoint {tenant.slug}:{result.events_checked}:{result.head_hash}"
                )
            else:
                failed.append(tenant.slug)
                self.stdout.write(f"{tenant.slug}: {verdict}")
        if failed:
            raise CommandError(f"audit chain broken or unverifiable for: {', '.join(failed)}")


def _parse_checkpoints(values: list[str]) -> list[tuple[str, int, str]]:
    parsed = []
    for value in values:
        match = _CHECKPOINT.fullmatch(value.strip())
        if match is None:
            raise CommandError(f"--checkpoint {value!r}: write it as TENANT:SEQ:HASH")
        parsed.append((match["slug"], int(match["seq"]), match["hash"]))
    return parsed


def _checkpoints_held(
    tenant: Tenant, result: ChainVerification, checkpoints: list[tuple[str, int, str]]
) -> str | None:
    for slug, seq, digest in checkpoints:
        if slug != tenant.slug:
            continue
        if seq > result.events_checked:
            return (
                f"BROKEN: checkpoint seq {seq} is gone, the chain ends at "
                f"{result.events_checked} (newest events removed, or an older database)"
            )
        if audit_hash_at(tenant=tenant, seq=seq) != digest:
            return (
                f"BROKEN at seq {seq}: not the event checkpointed (another chain: an older "
                "database, or one rewritten with the key)"
            )
    return None


def _verdict(result: ChainVerification) -> str:
    missing = ", ".join(result.missing_key_ids)
    if result.reason is Problem.KEY_MISSING:
        return (
            f"CANNOT VERIFY: key {missing} not configured (MEMGOV_AUDIT_KEYS or "
            f"SECRET_KEY_FALLBACKS); {result.events_checked} events walked, no tampering found"
            " in what could be checked (a key id never configured would mean the events"
            " naming it were relabelled)"
        )
    why = _WHY[result.reason] if result.reason else "broken"
    line = (
        f"BROKEN at seq {result.first_bad_seq}: {why} "
        f"({result.events_checked} events verified before it)"
    )
    return line + (f"; key {missing} not configured" if missing else "")
