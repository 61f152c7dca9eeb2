"""Keyset (cursor) pagination: ``{"results": [...], "next": url | null}``.

The cursor is the last key of the page, opaque to clients (``core.cursors``: signed, so
one this API did not give out is a 422); pages stay stable while rows are added, unlike
offsets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db.models import Model, QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.utils.urls import replace_query_param

from core.cursors import CURSOR_PATTERN, CursorCodec
from core.errors import InvalidContent
from core.inputs import strict_int

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
M = TypeVar("M", bound=Model)


# What the lists' query parameters take, for the OpenAPI description (issue 44): a client
# generated from it sends a limit and a cursor these lists accept.
PAGE_PARAMETERS = [
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
        required=False,
    ),
    OpenApiParameter("cursor", str, required=False, pattern=CURSOR_PATTERN),
]
# A filter's text: empty is "no filter"; a control character is refused (core.inputs).
_FILTER_TEXT = r"^[^\x00-\x1f\x7f-\x9f]*$"


def text_parameter(name: str, description: str = "", **kwargs: Any) -> OpenApiParameter:
    """An optional query filter of text (no control character; ``core.inputs``)."""
    pattern = kwargs.pop("pattern", _FILTER_TEXT)
    return OpenApiParameter(
        name, str, required=False, description=description, pattern=pattern, **kwargs
    )


def page_limit(request: Request) -> int:
    limit = strict_int(request.query_params.get("limit", str(DEFAULT_LIMIT)), max_digits=3)
    if limit is None or not 1 <= limit <= MAX_LIMIT:
        raise InvalidContent({"limit": [f"must be an integer from 1 to {MAX_LIMIT}"]})
    return limit


def _codec(queryset: QuerySet[Any], key: str, key_type: Callable[[str], Any]) -> CursorCodec:
    """One list's cursors, named by what it pages (``memory.version.item_id``), so that a
    cursor of one list is refused by another."""
    name = f"{queryset.model._meta.label_lower}.{key}"
    return CursorCodec(name, (int,) if key_type is int else (str,))


def paginate(
    request: Request,
    queryset: QuerySet[M],
    *,
    key: str,
    represent: Callable[[M], dict[str, Any]],
    key_type: Callable[[str], Any] = str,
) -> dict[str, Any]:
    """One page in ascending ``key`` order. The queryset holds only what the caller may
    see (visibility is filtered in SQL, ``memory.visibility``), so one query of ``limit``
    + 1 rows fills the page and says whether another follows."""
    limit = page_limit(request)
    cursor = request.query_params.get("cursor")
    codec = _codec(queryset, key, key_type)
    rows = queryset.order_by(key)
    if cursor:
        rows = rows.filter(**{f"{key}__gt": codec.decode(cursor)[0]})
    page = list(rows[: limit + 1])
    has_more = len(page) > limit
    page = page[:limit]
    next_url = None
    if has_more:
        token = codec.encode([getattr(page[-1], key)])
        next_url = replace_query_param(request.build_absolute_uri(), "cursor", token)
    return {"results": [represent(row) for row in page], "next": next_url}
