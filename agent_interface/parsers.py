"""DRF's JSON parser behind the input boundary (``core.inputs``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from core.errors import Unparseable
from core.inputs import load_json


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser with the boundary's depth, UTF-8 and NUL rules applied."""

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        charset = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        if str(charset).lower().replace("_", "-") not in ("utf-8", "utf8"):
            raise ParseError("JSON bodies must be UTF-8.")
        try:
            return load_json(stream.read() if stream is not None else b"")
        except Unparseable as exc:
            raise ParseError(exc.detail) from exc
