"""Where a webhook may point: http or https, no credentials in the URL, and — unless
``MEMGOV_WEBHOOK_ALLOW_PRIVATE`` — a host whose every address is public. Checked when the
endpoint is created and again before each attempt (a name may resolve elsewhere later);
the attempt then connects to the addresses it checked, never to a second answer of the
resolver (DNS rebinding)."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

MAX_URL_CHARS = 2000
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# IPv6 prefixes whose last 32 bits are an IPv4 address that the packet ends up at:
# IPv4-translated (RFC 2765, SIIT), IPv4-compatible (RFC 4291, deprecated) and the NAT64
# well-known prefix (RFC 6052). ``ipv4_mapped``, ``sixtofour`` and ``teredo`` of
# ``ipaddress`` cover the others.
_LAST_32_BITS_ARE_IPV4 = (
    ipaddress.IPv6Network("::ffff:0:0:0/96"),
    ipaddress.IPv6Network("::/96"),
    ipaddress.IPv6Network("64:ff9b::/96"),
)
# Local-use NAT64 (RFC 8215): an operator's own translator, into its own network; where
# the IPv4 address sits depends on a prefix length only that operator knows.
_NEVER_PUBLIC = (ipaddress.IPv6Network("64:ff9b:1::/48"),)


@dataclass(frozen=True)
class Target:
    """A URL's host resolved once: the addresses an attempt may connect to, or why not."""

    host: str
    port: int
    addresses: tuple[str, ...] = ()
    problem: str | None = None


def url_problem(url: str) -> str | None:
    """Why Memgov will not post to ``url``, or None: what an endpoint is created with.
    With ``MEMGOV_WEBHOOK_ALLOW_PRIVATE`` the name need not resolve yet."""
    parts = _parts(url)
    if isinstance(parts, str):
        return parts
    if settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE:
        return None
    return _resolved(*parts).problem


def url_target(url: str) -> Target:
    """Check ``url`` and resolve its host, once: what an attempt connects to. With
    ``MEMGOV_WEBHOOK_ALLOW_PRIVATE`` any address is allowed, but still resolved only here."""
    parts = _parts(url)
    if isinstance(parts, str):
        return Target("", 0, problem=parts)
    return _resolved(*parts)


def _parts(url: str) -> tuple[str, int] | str:
    """The host and port of ``url``, or why it is no webhook URL."""
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
    return parts.hostname, port


def _resolved(host: str, port: int) -> Target:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return Target(host, port, problem=f"host {host} does not resolve")
    addresses = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
    if not settings.MEMGOV_WEBHOOK_ALLOW_PRIVATE:
        for raw in addresses:
            address = ipaddress.ip_address(raw.split("%", 1)[0])
            if not is_public(address):
                problem = (
                    f"host {host} resolves to {address}, a loopback, private, link-local or "
                    "reserved address"
                )
                return Target(host, port, problem=problem)
    return Target(host, port, addresses)


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries, which packets to it may reach."""
    found = [address.ipv4_mapped, address.sixtofour, *(address.teredo or ())]
    if any(address in network for network in _LAST_32_BITS_ARE_IPV4):
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return [ipv4 for ipv4 in found if ipv4 is not None]


def is_public(address: IPAddress) -> bool:
    """A global unicast address, and so is every IPv4 address it carries."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:0:0/96 itself is not global
    if not address.is_global or address.is_multicast:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return True
    if any(address in network for network in _NEVER_PUBLIC):
        return False
    return all(is_public(ipv4) for ipv4 in embedded_ipv4(address))
