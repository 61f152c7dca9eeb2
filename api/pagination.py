"""Keyset (cursor) pagination: ``{"results": [...], "next": url | null}``.

The cursor is the last key of the page, opaque to clients; pages stay stable while rows
are added, unlike offsets."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db.models import Model, QuerySet
from rest_framework.request import Request
from rest_framework.utils.urls import replace_query_param

from core.errors import InvalidContent
from core.inputs import strict_int, text_problem

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
M = TypeVar("M", bound=Model)


def page_limit(request: Request) -> int:
    limit = strict_int(request.query_params.get("limit", str(DEFAULT_LIMIT)), max_digits=3)
    if limit is None or not 1 <= limit <= MAX_LIMIT:
        raise InvalidContent({"limit": [f"must be an integer from 1 to {MAX_LIMIT}"]})
    return limit


def _decode(cursor: str, key_type: Callable[[str], Any]) -> Any:
    """The key a cursor holds; anything this API could not have given out is a 422."""
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        raw = "\x00"
    key = strict_int(raw) if key_type is int else (None if text_problem(raw) else key_type(raw))
    if key is None:
        raise InvalidContent({"cursor": ["is not a cursor this API gave out"]})
    return key


def paginate(
    request: Request,
    queryset: QuerySet[M],
    *,
    key: str,
    represent: Callable[[M], dict[str, Any]],
    keep: Callable[[M], bool] = lambda _row: True,
    key_type: Callable[[str], Any] = str,
) -> dict[str, Any]:
    """One page in ascending ``key`` order; ``keep`` drops rows the caller may not see
    without breaking the page size (we read ahead until the page is full)."""
    limit = page_limit(request)
    cursor = request.query_params.get("cursor")
    rows = queryset.order_by(key)
    if cursor:
        rows = rows.filter(**{f"{key}__gt": _decode(cursor, key_type)})
    page: list[M] = []
    last_key: Any = None
    batch_size = limit + 1
    while len(page) <= limit:
        batch: Sequence[M] = list(
            rows[:batch_size]
            if last_key is None
            else rows.filter(**{f"{key}__gt": last_key})[:batch_size]
        )
        for row in batch:
            last_key = getattr(row, key)
            if keep(row):
                page.append(row)
                if len(page) > limit:
                    break
        if len(batch) < batch_size:
            break
    has_more = len(page) > limit
    page = page[:limit]
    next_url = None
    if has_more:
        token = base64.urlsafe_b64encode(str(getattr(page[-1], key)).encode()).decode("ascii")
        next_url = replace_query_param(request.build_absolute_uri(), "cursor", token)
    return {"results": [represent(row) for row in page], "next": next_url}
