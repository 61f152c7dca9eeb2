"""JSON out: DRF's renderer, and answers that are JSON already sent as they are."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from rest_framework import renderers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer


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


class JSONOnlyNegotiation(DefaultContentNegotiation):
    """The JSON API has one renderer: it answers JSON whatever the ``Accept`` header asks
    for (DRF's documented fixed negotiation), rather than parsing the header on every
    request to answer an undocumented 406. Parsers are still chosen by ``Content-Type``,
    so a body that is not JSON stays a 415."""

    def select_renderer(
        self,
        request: Any,
        renderers: Iterable[BaseRenderer],
        format_suffix: str | None = None,
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type
