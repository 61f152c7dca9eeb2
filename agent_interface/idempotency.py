"""``Idempotency-Key`` as DRF sees it: the request's fingerprint, the first answer kept
and replayed as a response. The records themselves are ``memory.idempotency``'s."""

from __future__ import annotations

import hashlib
from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from agent_interface.renderers import EncodedJSON
from core.models import IdempotencyRecord
from core.principals import Principal
from memory.idempotency import StoredAnswer, caller, record_answer

_REPLAYED_HEADERS = ("ETag", "Location")


def request_hash(request: Request) -> str:
    """Method, path, caller and raw body: same key, same bytes."""
    who = caller(request.auth) if isinstance(request.auth, Principal) else ""
    head = f"{request.method} {request.path} {who}\n".encode()
    return hashlib.sha256(head + request.body).hexdigest()


def keep_answer(record: IdempotencyRecord, response: Response) -> None:
    """Keep ``response`` as the answer to the request's retries."""
    headers: dict[str, Any] = {h: response[h] for h in _REPLAYED_HEADERS if response.has_header(h)}
    if response.content_type:
        headers["Content-Type"] = response.content_type
    body = response.data
    if isinstance(body, EncodedJSON):
        body = body.decoded()
    record_answer(record, response.status_code, body, headers)


def replayed(answer: StoredAnswer) -> Response:
    """The first answer, as the retry gets it."""
    headers = dict(answer.headers)
    content_type = headers.pop("Content-Type", None)
    response = Response(
        answer.body, status=answer.status, headers=headers, content_type=content_type
    )
    response["Idempotent-Replayed"] = "true"
    return response
