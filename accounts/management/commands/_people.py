"""Shared by ``deactivate_user`` and ``reactivate_user``: find the person in the tenant."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management.base import CommandError

from core.models import Tenant


def member(username: str, tenant_slug: str) -> User:
    tenant = Tenant.objects.filter(slug=tenant_slug).first()
    if tenant is None:
        raise CommandError(f"no tenant {tenant_slug!r}")
    user = get_user_model().objects.filter(username=username, membership__tenant=tenant).first()
    if user is None:
        raise CommandError(f"no user {username!r} in tenant {tenant.slug}")
    return user
