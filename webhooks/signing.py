"""Standard Webhooks signatures (https://www.standardwebhooks.com/): HMAC-SHA256 of
``{webhook-id}.{webhook-timestamp}.{body}`` with the endpoint's secret, sent as
``v1,<base64>``. While a secret rotates, both the new and the previous one sign, space
separated, so a receiver holding either verifies the delivery."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Sequence

SECRET_PREFIX = "whsec_"  # noqa: S105 - the format marker, not a secret
SECRET_BYTES = 24
USER_AGENT = "Memgov-Webhooks/1"


def secret_new() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def signature(secret: str, *, msg_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    digest = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signed_headers(
    keys: Sequence[str], *, msg_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            signature(key, msg_id=msg_id, timestamp=timestamp, body=body) for key in keys
        ),
    }
