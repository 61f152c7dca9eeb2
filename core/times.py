"""Instants as the contract writes them."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson


def iso(value: datetime | None) -> str | None:
    """UTC with ``Z``, as the contract says."""
    if value is None:
        return None
    return iso_instant(value)


def iso_instant(value: datetime) -> str:
    """``iso`` of an instant that is always there. Most are plain datetimes in UTC already
    (the database session's and Django's clock): orjson writes those as the contract does
    (RFC 3339 with ``Z``, microseconds only when there are some) in a third of the time
    ``isoformat`` takes, and a resolve writes about twenty. Anything else is converted and
    written by ``isoformat``."""
    if value.tzinfo is UTC and type(value) is datetime:
        return orjson.dumps(value, option=orjson.OPT_UTC_Z)[1:-1].decode()
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
