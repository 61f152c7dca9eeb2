from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.grants import permissions_grant
from accounts.tenancy import user_create
from core.models import GRANTABLE_PERMISSIONS, Tenant

GRANT_RE = re.compile(r"^(?P<perm>[a-z_]+)(?:@(?P<dim>[a-z][a-z0-9_]{0,31})=(?P<value>.+))?$")


def parse_grant(raw: str) -> tuple[str, str | None, str | None]:
    match = GRANT_RE.match(raw)
    if match is None or match["perm"] not in GRANTABLE_PERMISSIONS:
        raise CommandError(
            f"--grant {raw!r}: expected PERM[@DIM=VALUE], "
            f"PERM one of {sorted(GRANTABLE_PERMISSIONS)}"
        )
    return match["perm"], match["dim"], match["value"]


class Command(BaseCommand):
    help = "Create a person in a tenant, with labels and object permissions."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--password", default=None)
        parser.add_argument("--email", default="")
        parser.add_argument("--labels", default="")
        parser.add_argument(
            "--grant",
            action="append",
            default=[],
            help="PERM or PERM@DIM=VALUE, e.g. review_task_fact@project=P-9",
        )
        parser.add_argument(
            "--staff",
            action="store_true",
            help="a tenant admin: may open the Django admin, scoped to this tenant "
            "(grants tenant_admin)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant {options['tenant']!r}")
        if get_user_model().objects.filter(username=options["username"]).exists():
            raise CommandError(f"user {options['username']!r} already exists")
        grants = [parse_grant(g) for g in options["grant"]]
        if options["staff"] and ("tenant_admin", None, None) not in grants:
            grants.append(("tenant_admin", None, None))
        labels = [label.strip() for label in options["labels"].split(",") if label.strip()]
        user = user_create(
            tenant=tenant,
            username=options["username"],
            password=options["password"],
            email=options["email"],
            labels=labels,
            staff=options["staff"],
        )
        permissions_grant(user=user, tenant=tenant, grants=grants)
        self.stdout.write(f"created user {user.get_username()} in {tenant.slug}")
        if options["staff"]:
            self.stdout.write(
                f"Admin login: {settings.SITE_URL}/admin/ as {user.get_username()} "
                f"({tenant.slug}'s rows only)"
            )
