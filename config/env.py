"""Typed readers for settings that come from the environment.

Secrets may also come from a file named by ``<NAME>_FILE`` (Docker and Kubernetes secrets).
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        return Path(file_name).read_text(encoding="utf-8").strip()
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def redis_database(url: str) -> tuple[str, str] | None:
    """The Redis server and database number a URL names (``redis://h:6379`` is database 0
    of h:6379, as redis-py reads it), or None for a URL that is not Redis."""
    parts = urlsplit(url)
    if parts.scheme not in {"redis", "rediss", "unix"}:
        return None
    db = parse_qs(parts.query).get("db", ["0"])[0]
    if parts.scheme == "unix":
        return parts.path, db
    server = f"{_host(parts.hostname or 'localhost')}:{parts.port or 6379}"
    return server, parts.path.strip("/") or db


def _host(name: str) -> str:
    """``localhost``, ``127.0.0.1`` and ``::1`` are one server (issue 47: a cache on
    ``localhost:16471/8`` and a broker on ``127.0.0.1:16471/8`` shared a database)."""
    name = name.lower().strip("[]")
    try:
        return "localhost" if ipaddress.ip_address(name).is_loopback else name
    except ValueError:
        return name
