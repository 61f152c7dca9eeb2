"""Every email is a triplet of templates (subject, text, HTML) rendered by one helper."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string


def render(name: str, context: dict[str, Any]) -> tuple[str, str, str]:
    full = {"site_url": settings.SITE_URL, **context}
    subject = render_to_string(f"emails/{name}_subject.txt", full).strip().replace("\n", " ")
    text = render_to_string(f"emails/{name}_body.txt", full)
    html = render_to_string(f"emails/{name}_body.html", full)
    return subject, text, html


def send(name: str, to: str, context: dict[str, Any]) -> None:
    subject, text, html = render(name, context)
    message = EmailMultiAlternatives(subject, text, settings.DEFAULT_FROM_EMAIL, [to])
    message.attach_alternative(html, "text/html")
    message.send()
