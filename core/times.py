"""Instants as the contract writes them."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(value: datetime | None) -> str | None:
    """UTC with ``Z``, as the contract says."""
    if value is None:
        return None
    return iso_instant(value)


def iso_instant(value: datetime) -> str:
    """``iso`` of an instant that is always there. Most are in UTC already (the database
    session's and Django's clock): those skip the conversion, a fifth of the call."""
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    return value.isoformat().replace("+00:00", "Z")
