"""Times as people read them: relative to now ("in 3 days", "5 hours ago", "just now"),
the same wording as the emails (``approvals.emails.relative``)."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone

from approvals.emails import relative

register = template.Library()


@register.filter
def ago(moment: datetime | None) -> str:
    """ "12 minutes ago" — never "0 minutes": under a minute is "just now"."""
    return "" if moment is None else relative(moment, timezone.now())
