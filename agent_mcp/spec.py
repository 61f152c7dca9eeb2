"""What a tool is: its name, description and input schema as a model reads them, and the
function of ``agent_interface`` it calls. Its own module, so that the modules holding tools
(``agent_mcp.tools``, ``discovery_tools``, ``context_tools``) import it in any order."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from core.principals import Principal

Run = Callable[[Principal, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    properties: Mapping[str, Any]
    required: tuple[str, ...]
    run: Run
    writes: bool  # a write takes an ``idempotency_key``; a read is safe to repeat

    def input_schema(self) -> dict[str, Any]:
        properties = dict(self.properties)
        if self.writes:
            properties["idempotency_key"] = _IDEMPOTENCY_KEY
        return {
            "type": "object",
            "properties": properties,
            "required": list(self.required),
            "additionalProperties": False,
        }


_IDEMPOTENCY_KEY = {
    "type": "string",
    "minLength": 1,
    "maxLength": 200,
    "description": "Optional. A unique string per intended write (e.g. a UUID). If the call "
    "times out or the connection drops, repeat it with the same key and arguments: you get "
    "the first answer and nothing is written twice.",
}
