"""People and their keys over time: deactivation, labels, key rotation (docs/design.md,
Permissions). Each is one audited transaction; authentication reads the result on the
very next request (``accounts.keys``), so nothing here needs a cache invalidated."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from accounts.keys import generate_key, hash_key
from audit.services import audit_append
from core.errors import Conflict
from core.models import ApiKey, Membership
from core.times import iso


def _set_active(*, user: User, active: bool, actor: str) -> User:
    with transaction.atomic(durable=True):
        locked = get_user_model().objects.select_for_update().get(pk=user.pk)
        membership = Membership.objects.select_related("tenant").get(user=locked)
        if locked.is_active != active:
            locked.is_active = active
            locked.save(update_fields=["is_active"])
            audit_append(
                tenant=membership.tenant,
                actor=actor,
                action="user.reactivated" if active else "user.deactivated",
                target_type="user",
                target_id=locked.get_username(),
                data={},
            )
    return locked


def user_deactivate(*, user: User, actor: str = "operator") -> User:
    """From the next request the person has no session, no working key, no authority
    and no email; their history and grants stay, so reactivation restores them."""
    return _set_active(user=user, active=False, actor=actor)


def user_reactivate(*, user: User, actor: str = "operator") -> User:
    return _set_active(user=user, active=True, actor=actor)


def membership_relabel(*, user: User, labels: Sequence[str], actor: str = "operator") -> Membership:
    """New visibility labels for a person: their session and personal keys use them on the
    next request (keys read the membership each time)."""
    with transaction.atomic(durable=True):
        membership = (
            Membership.objects.select_for_update(of=("self",))
            .select_related("tenant", "user")
            .get(user=user)
        )
        before = sorted(str(label) for label in membership.labels)
        membership.labels = sorted({str(label) for label in labels})
        membership.save(update_fields=["labels"])
        audit_append(
            tenant=membership.tenant,
            actor=actor,
            action="user.labels_changed",
            target_type="user",
            target_id=user.get_username(),
            data={"before": before, "after": membership.labels},
        )
    return membership


def api_key_rotate(
    *, key: ApiKey, actor: str = "operator", overlap: timedelta = timedelta(0)
) -> tuple[ApiKey, str]:
    """A new key for the same principal, labels and lifetime. Without ``overlap`` the old
    one is revoked in the same transaction (never a moment with both or neither); with
    it, the old one keeps working until then (it expires, sooner if it already would), so
    agents can move to the new key without a failed request."""
    lookup, raw = generate_key()
    with transaction.atomic(durable=True):
        old = (
            ApiKey.objects.select_for_update(of=("self",), no_key=True)
            .select_related("tenant", "user")
            .get(pk=key.pk)
        )
        if old.revoked_at is not None:
            raise Conflict(f"API key {old.prefix} is revoked; create a new one instead.")
        now = timezone.now()
        new = ApiKey.objects.create(
            tenant=old.tenant,
            prefix=lookup,
            key_hash=hash_key(raw),
            principal=old.principal,
            agent_name=old.agent_name,
            user=old.user,
            labels=list(old.labels),
            lifetime=old.lifetime,
            expires_at=now + old.lifetime if old.lifetime else None,
        )
        if overlap > timedelta(0):
            until = now + overlap
            old.expires_at = until if old.expires_at is None else min(old.expires_at, until)
            old.save(update_fields=["expires_at"])
        else:
            old.revoked_at = now
            old.save(update_fields=["revoked_at"])
        audit_append(
            tenant=old.tenant,
            actor=actor,
            action="api_key.rotated",
            target_type="api_key",
            target_id=old.prefix,
            data={"principal": old.principal_name, "new_key": new.prefix}
            | ({"old_valid_until": iso(old.expires_at)} if overlap > timedelta(0) else {}),
        )
    return new, raw
