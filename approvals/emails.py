"""Every email is a triplet of templates (subject, text, HTML) rendered by one helper, from
``Line``s prepared here for one recipient: human kind names with their article, times in
the tenant's zone with a relative form, and the statement and value only for a recipient
who may see them (``core.authority.version_visible``, the rule the API applies)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.utils import timezone

from approvals import wording
from core import authority
from core.principals import principal_for_user
from memory.models import MemoryVersion, Status

JUST_NOW = timedelta(minutes=1)
UNITS = (
    ("year", 365 * 86400),
    ("month", 30 * 86400),
    ("week", 7 * 86400),
    ("day", 86400),
    ("hour", 3600),
    ("minute", 60),
)


def kind_name(kind: str) -> str:
    return kind.replace("_", " ")  # "task_fact": "task fact"


def with_article(noun: str) -> str:
    """ "an enterprise rule", "a task fact" (every kind name starts as it sounds)."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def span(seconds: float) -> str:
    """The largest unit, rounded: 4 days 23 hours is "5 days", not "4 days"."""
    for name, size in UNITS:
        if seconds >= size:
            count = round(seconds / size)
            return f"{count} {name}{'' if count == 1 else 's'}"
    return "less than a minute"


def relative(moment: datetime, now: datetime) -> str:
    """ "in 3 days", "2 hours ago", "just now"."""
    seconds = (moment - now).total_seconds()
    if abs(seconds) < JUST_NOW.total_seconds():
        return "just now"
    return f"in {span(seconds)}" if seconds > 0 else f"{span(-seconds)} ago"


def when(moment: datetime | None, zone: Any, now: datetime, *, none: str = "never") -> str:
    """ "2026-12-04 09:30 CET (in 3 days)": minutes, the zone's name, no microseconds."""
    if moment is None:
        return none
    local = moment.astimezone(zone)
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()} ({relative(moment, now)})"


@dataclass(frozen=True)
class Line:
    """One memory as one recipient may read it in an email."""

    memory_id: str
    numbers: tuple[int, ...]
    kind: str
    a_kind: str
    field: str
    visible: bool
    statement: str
    value: str
    scope: str
    proposed_by: str
    proposed: str
    expires: str
    approvals_required: int
    reason: str
    status: str
    owned: bool
    url: str
    # Issue 43, point 12: what a reader needs to triage it, in words (``approvals.wording``).
    checks: str = ""
    deciders: str = ""
    corrects: str = ""

    @property
    def versions(self) -> str:
        """ "version 2" or "versions 1 and 2"."""
        if len(self.numbers) == 1:
            return f"version {self.numbers[0]}"
        *first, last = self.numbers
        return f"versions {', '.join(map(str, first))} and {last}"


def _value_words(version: MemoryVersion) -> str:
    """The value as JSON; a value still asked about says so instead of "null"."""
    if version.value is None and version.status == Status.HELD_UNRESOLVED:
        return "not chosen yet: its question asks which value is meant"
    return json.dumps(version.value, ensure_ascii=False)


def line(version: MemoryVersion, user: User, now: datetime, numbers: Sequence[int] = ()) -> Line:
    principal = principal_for_user(user)
    visible = principal is not None and authority.version_visible(version, principal)
    zone = version.tenant.zone
    scope = " ".join(
        "tenant-wide" if (dim, value) == ("tenant", "*") else f"{dim}={value}"
        for dim, value in sorted(version.scope.items())
    )  # "tenant-wide": the one name the dashboard uses too
    return Line(
        memory_id=version.item_id,
        numbers=tuple(numbers) or (version.number,),
        kind=kind_name(version.kind),
        a_kind=with_article(kind_name(version.kind)),
        field=version.field,
        visible=visible,
        statement=version.statement if visible else "",
        value=_value_words(version) if visible else "",
        scope=scope or "tenant-wide",
        proposed_by=version.proposed_by,
        proposed=when(version.recorded_at, zone, now),
        expires=when(version.expires_at, zone, now),
        approvals_required=version.approvals_required,
        reason=wording.reason_words(version, principal),
        status=version.status,
        owned=version.owner_id == user.pk,
        url=f"{settings.SITE_URL}/memories/{version.item_id}/",
        checks=wording.check_words(version, principal),
        deciders=wording.decider_words(version, user),
        corrects=wording.correction_words(version, principal),
    )


def lines(versions: Sequence[MemoryVersion], user: User) -> list[Line]:
    """One line per memory item (an item retired with its open correction is one line)."""
    now = timezone.now()
    by_item: dict[str, list[MemoryVersion]] = {}
    for version in versions:
        by_item.setdefault(version.item_id, []).append(version)
    result = []
    for group in by_item.values():
        group.sort(key=lambda v: v.number)
        result.append(line(group[-1], user, now, [v.number for v in group]))
    return result


def render(name: str, context: dict[str, Any]) -> tuple[str, str, str]:
    full = {"site_url": settings.SITE_URL, **context}
    subject = render_to_string(f"emails/{name}_subject.txt", full).strip().replace("\n", " ")
    text = render_to_string(f"emails/{name}_body.txt", full)
    html = render_to_string(f"emails/{name}_body.html", full)
    return subject, text, html


def send(name: str, user: User, versions: Sequence[MemoryVersion], extra: dict[str, Any]) -> None:
    """One message to one person about ``versions`` (one or many: the template says which)."""
    items = lines(versions, user)
    send_to(name, user, {"items": items, "item": items[0], **extra})


def send_to(name: str, user: User, context: dict[str, Any]) -> None:
    """One message to one person about something other than memory versions (an erasure,
    a webhook endpoint): the template gets ``user`` and ``context``."""
    subject, text, html = render(name, {"user": user, **context})
    message = EmailMultiAlternatives(subject, text, settings.DEFAULT_FROM_EMAIL, [user.email])
    message.attach_alternative(html, "text/html")
    message.send()
