"""Where a webhook may point: http or https, no credentials in the URL, and — unless
``MEMGOV_WEBHOOK_ALLOW_PRIVATE`` — a host whose every address is public. Checked when the
endpoint is created and again before each attempt (a name may resolve elsewhere later)."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

MAX_URL_CHARS = 2000


def url_problem(url: str) -> str | None:
    """Why Memgov will not post to ``url``, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return "must be an http or https URL"
    if not parts.hostname:
        return "must name a host"
    if parts.username is not None or parts.password is not None:
        return "must not carry credentials"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "has an invalid port"
    if settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE:
        return None
    return _address_problem(parts.hostname, port)


def _address_problem(host: str, port: int) -> str | None:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return f"host {host} does not resolve"
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if not is_public(address):
            return (
                f"host {host} resolves to {address}, a loopback, private, link-local or "
                "reserved address"
            )
    return None


def is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast
