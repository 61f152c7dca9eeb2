"""Verify a Memgov webhook delivery per the Standard Webhooks specification.

The signed content is ``{webhook-id}.{webhook-timestamp}.{raw body}``, HMAC-SHA256 with the
endpoint's secret (``whsec_`` + base64), sent as ``v1,<base64>``; several space-separated
signatures may be sent while a secret rotates. Verify the raw bytes you received: a body
parsed and serialized again no longer matches its signature."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import cast

from memgov_client.types import WebhookPayload

SECRET_PREFIX = "whsec_"  # noqa: S105 - the format marker, not a secret
TOLERANCE_SECONDS = 5 * 60


class WebhookVerificationError(Exception):
    """The delivery is not proven to come from Memgov: drop it (answer 400)."""


def _secret_bytes(secret: str | bytes) -> bytes:
    if isinstance(secret, bytes):
        key = secret
    else:
        try:
            encoded = secret.removeprefix(SECRET_PREFIX)
            # Some producers drop base64 padding; the key is the same bytes either way.
            key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError("a webhook secret is whsec_ followed by base64") from exc
    if not key:
        raise ValueError("the webhook secret is empty")
    return key


def sign_webhook(secret: str | bytes, *, msg_id: str, timestamp: int, payload: bytes | str) -> str:
    """The ``webhook-signature`` value for one message (``v1,<base64>``)."""
    body = payload.encode() if isinstance(payload, str) else payload
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(_secret_bytes(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def verify_webhook(
    payload: bytes | str,
    headers: Mapping[str, str],
    secret: str | bytes,
    *,
    tolerance: float = TOLERANCE_SECONDS,
    now: float | None = None,
) -> WebhookPayload:
    """The parsed body when one ``v1`` signature matches and the timestamp is within
    ``tolerance`` seconds of ``now`` (replays are refused); else ``WebhookVerificationError``.

    Use ``webhook-id`` as an idempotency key: a delivery may arrive more than once."""
    lowered = {name.lower(): value for name, value in headers.items()}
    msg_id = lowered.get("webhook-id")
    stamp = lowered.get("webhook-timestamp")
    signatures = lowered.get("webhook-signature")
    if not (msg_id and stamp and signatures):
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or signature")
    try:
        timestamp = int(stamp)
    except ValueError as exc:
        raise WebhookVerificationError("webhook-timestamp is not an integer") from exc
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise WebhookVerificationError("webhook-timestamp is outside the tolerance")
    expected = sign_webhook(secret, msg_id=msg_id, timestamp=timestamp, payload=payload)
    expected_bytes = base64.b64decode(expected.partition(",")[2])
    for candidate in signatures.split():
        version, _, encoded = candidate.partition(",")
        if version != "v1":
            continue  # another scheme (v1a) or a future version: not ours to judge
        try:
            given = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            continue
        if hmac.compare_digest(expected_bytes, given):
            body = payload.decode() if isinstance(payload, bytes) else payload
            return cast(WebhookPayload, json.loads(body))
    raise WebhookVerificationError("no matching signature")
