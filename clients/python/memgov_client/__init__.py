"""Typed Python client for Memgov, the governed memory for AI agents (docs/api.md).

``Memgov`` (sync) and ``AsyncMemgov`` (asyncio) on httpx; every problem answer raises a
``MemgovError`` subclass; ``verify_webhook`` checks a delivery's Standard Webhooks signature.
"""

from memgov_client._ops import OPERATIONS
from memgov_client._retry import RetryPolicy
from memgov_client.aio import AsyncMemgov
from memgov_client.client import Memgov
from memgov_client.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    MemgovError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    PreconditionRequired,
    ServerError,
    StaleVersion,
    Throttled,
    TransportFailed,
    Unauthorized,
    UnexpectedResponse,
    UnsupportedMediaType,
)
from memgov_client.webhooks import WebhookVerificationError, sign_webhook, verify_webhook

__all__ = [
    "OPERATIONS",
    "AsyncMemgov",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "Memgov",
    "MemgovError",
    "MethodNotAllowed",
    "NotFound",
    "PayloadTooLarge",
    "PreconditionRequired",
    "RetryPolicy",
    "ServerError",
    "StaleVersion",
    "Throttled",
    "TransportFailed",
    "Unauthorized",
    "UnexpectedResponse",
    "UnsupportedMediaType",
    "WebhookVerificationError",
    "sign_webhook",
    "verify_webhook",
]
