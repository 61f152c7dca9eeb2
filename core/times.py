"""Instants as the contract writes them."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(value: datetime | None) -> str | None:
    """UTC with ``Z``, as the contract says."""
    if value is None:
        return None
    return iso_instant(value)


def iso_instant(value: datetime) -> str:
    """``iso`` of an instant that is always there."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
