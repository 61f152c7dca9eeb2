"""JSON out: DRF's renderer, and answers that are JSON already sent as they are."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from rest_framework import renderers


class EncodedJSON(bytes):
    """An answer that is JSON already (a resolution from the cache, stored as JSON): the
    renderer sends these bytes, rather than decoding them and encoding them again."""

    def decoded(self) -> Any:
        return orjson.loads(bytes(self))  # orjson takes bytes, not a subclass


class JSONRenderer(renderers.JSONRenderer):
    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        if isinstance(data, EncodedJSON):
            return bytes(data)
        return super().render(data, accepted_media_type, renderer_context)
