"""The MCP tools' output schemas, derived from the REST operation each tool mirrors (the
published OpenAPI description), so a tool's declared answer cannot drift from REST's.

``python -m tests.mcp.output_schemas`` (with DJANGO_SETTINGS_MODULE set) rewrites
agent_mcp/output_schemas.json; test_output_schemas checks the file is current."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

FILE = Path(__file__).resolve().parents[2] / "agent_mcp" / "output_schemas.json"

# tool → (operation id, status, whether the REST page's "next" URL is a "next_cursor")
MIRRORS: dict[str, tuple[str, str, bool]] = {
    "resolve": ("resolve", "200", False),
    "check_task": ("task_get", "200", False),
    "record_source": ("source_record", "201", False),
    "propose_memory": ("memory_propose", "201", False),
    "correct_memory": ("memory_correct", "201", False),
    "get_memory": ("memory_get", "200", False),
    "match_entity": ("entity_match", "200", False),
    "search": ("search", "200", True),
    "list_entity_facts": ("entity_facts", "200", True),
    "list_my_proposals": ("proposal_list_mine", "200", True),
    "create_entity": ("entity_create", "201", False),
    "add_alias": ("entity_alias_add", "201", False),
    "list_entity_kinds": ("entity_kinds", "200", False),
    "match_external_ref": ("entity_match_external_ref", "200", False),
    "build_context": ("context_build", "200", False),
    "clarify": ("memory_clarify", "200", False),
    "describe_fields": ("field_list", "200", False),
}
_REF = re.compile(r'"\$ref": "#/\$defs/([^"]+)"')


def _operation(operation_id: str) -> dict[str, Any]:
    from tests.openapi_check import published_schema

    for operations in published_schema()["paths"].values():
        for operation in operations.values():
            if operation.get("operationId") == operation_id:
                return dict(operation)
    raise KeyError(operation_id)


def _closure(schema: Any, components: dict[str, Any]) -> dict[str, Any]:
    """The components ``schema`` refers to, directly or through each other."""
    found: dict[str, Any] = {}
    pending = _REF.findall(json.dumps(schema))
    while pending:
        name = pending.pop()
        if name not in found:
            found[name] = components[name]
            pending += _REF.findall(json.dumps(components[name]))
    return dict(sorted(found.items()))


def output_schema(tool: str) -> dict[str, Any]:
    from tests.openapi_check import _json_schema, published_schema

    operation_id, status, cursor_page = MIRRORS[tool]
    content = _operation(operation_id)["responses"][status]["content"]
    schema = _json_schema(next(iter(content.values()))["schema"])
    components = _json_schema(published_schema()["components"]["schemas"])
    if "$ref" in schema:  # MCP wants an object at the top: inline the answer's own shape
        name = schema["$ref"].rsplit("/", 1)[1]
        schema = dict(components[name])
    if cursor_page:
        properties = {k: v for k, v in schema["properties"].items() if k != "next"}
        properties["next_cursor"] = {"type": ["string", "null"]}
        schema = {**schema, "properties": properties}
        schema["required"] = [("next_cursor" if r == "next" else r) for r in schema["required"]]
    defs = _closure(schema, components)
    return {**schema, "$defs": defs} if defs else schema


def all_schemas() -> dict[str, Any]:
    return {tool: output_schema(tool) for tool in sorted(MIRRORS)}


if __name__ == "__main__":
    import django

    django.setup()
    FILE.write_text(json.dumps(all_schemas(), indent=1, sort_keys=True) + "\n")
