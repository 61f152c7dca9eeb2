"""The JSON log line is written with orjson (``config.logs.json_line``): a line keeps the
shape ``json`` gave it, and a field orjson refuses never loses the line."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from config.logs import JsonFormatter


def _line(message: str, **fields: object) -> dict[str, object]:
    record = logging.LogRecord("memgov.request", logging.INFO, __file__, 1, message, (), None)
    record.request_id = "req-1"
    record.memgov = fields
    return json.loads(JsonFormatter().format(record))  # type: ignore[no-any-return]


def test_a_request_line_carries_its_fields_at_the_top_level():
    line = _line("POST /api/v1/resolve 200", status=200, ms=1.25, route="resolve")

    assert line["message"] == "POST /api/v1/resolve 200"
    assert line["request_id"] == "req-1"
    assert (line["status"], line["ms"], line["route"]) == (200, 1.25, "resolve")


def test_a_datetime_field_is_written_as_str_wrote_it():
    at = datetime(2026, 12, 5, 15, 0, tzinfo=UTC)

    assert _line("x", at=at)["at"] == "2026-12-05 15:00:00+00:00"


def test_a_field_orjson_refuses_still_gives_a_line():
    line = _line("lone \ud800 surrogate", big=2**70, by_id={7: "seven"})

    assert line["message"] == "lone \ud800 surrogate"
    assert (line["big"], line["by_id"]) == (2**70, {"7": "seven"})
