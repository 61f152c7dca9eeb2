"""Opaque, time-sortable ids with a type prefix (``mem_01j…``).

Time-sortable so that cursor pagination by id is also creation order.
"""

from __future__ import annotations

import secrets
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case


def _encode(number: int, length: int) -> str:
    chars = []
    for _ in range(length):
        number, rest = divmod(number, 32)
        chars.append(_ALPHABET[rest])
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    millis = time.time_ns() // 1_000_000
    return f"{prefix}_{_encode(millis, 10)}{_encode(secrets.randbits(80), 16)}"


def new_source_id() -> str:
    return new_id("src")


def new_entity_id() -> str:
    return new_id("ent")


def new_memory_id() -> str:
    return new_id("mem")


def new_retrieval_id() -> str:
    return new_id("rtv")


def new_revalidation_id() -> str:
    return new_id("rvl")


def new_webhook_id() -> str:
    return new_id("whk")


def new_delivery_id() -> str:
    return new_id("whd")


def new_event_id() -> str:
    """A webhook event's id, sent as ``webhook-id`` (Standard Webhooks calls it a message)."""
    return new_id("msg")


def new_erasure_id() -> str:
    return new_id("era")
