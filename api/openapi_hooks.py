"""What the OpenAPI description adds beyond the views' own declarations (issue 11, point 6):
the problem answers every operation can give, as one ``Problem`` component, and the
headers of the contract's conventions (``Idempotency-Key``, ``ETag``, ``Retry-After``)."""

from __future__ import annotations

from typing import Any

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "RFC 9457 problem details; ``errors`` names each refused member.",
    "properties": {
        "type": {"type": "string", "format": "uri"},
        "title": {"type": "string"},
        "status": {"type": "integer", "minimum": 400, "maximum": 599},
        "detail": {"type": "string"},
        "errors": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        },
        "current_version": {"type": "integer"},
    },
    "required": ["type", "title", "status", "detail"],
}

_WHY = {
    "400": "Malformed request: JSON syntax, nesting deeper than 64, NUL in the URL or a header.",
    "401": "No API key, or an unknown, revoked or expired one.",
    "403": "The principal may not do this.",
    "404": "No such resource visible to the principal.",
    "410": "The subject was erased (problem type `erased`).",
    "409": "Conflict with the current state (e.g. a stale If-Match, a key still in progress).",
    "413": "The body is larger than 256 KiB.",
    "415": "The body is not application/json.",
    "422": "The content breaks a rule; `errors` names each member.",
    "428": "A correction without If-Match.",
    "429": "Too many requests; see Retry-After.",
    "503": "A dependency (cache, broker) is unavailable; nothing was changed.",
}
_PROBLEM_REF = "#/components/schemas/Problem"
_EVERY = ("400", "401", "403", "404", "422", "429")
# Where an erased subject is a 410: reads about it, and every write that names it
# (issue 42: she takes no new data).
_GONE_READS = ("/resolve", "/context", "/search")
_GONE = (
    *_GONE_READS,
    "/memories",
    "/versions",
    "/aliases",
    "/link-subject",
    "/clarify",
)
_WRITES = ("409", "413", "415", "503")


def _problem(status: str) -> dict[str, Any]:
    return {
        "description": _WHY[status],
        "content": {
            "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
        },
    }


def close_request_bodies(result: dict[str, Any], **_: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: every request body refuses a member it does not
    declare (``agent_interface.serializers.StrictInput``, a 422), so its schema says
    ``additionalProperties: false``, as the MCP tools' input schemas do."""
    schemas = result.get("components", {}).get("schemas", {})
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            reference = (body or {}).get("schema", {}).get("$ref", "")
            if reference.startswith("#/components/schemas/"):
                schemas[reference.rsplit("/", 1)[-1]]["additionalProperties"] = False
    return result


def document_problems(result: dict[str, Any], **_: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: add the Problem component and every operation's
    problem answers (writes can also conflict, be too large or not JSON; corrections need
    If-Match)."""
    result.setdefault("components", {}).setdefault("schemas", {})["Problem"] = PROBLEM_SCHEMA
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            statuses = list(_EVERY)
            if method in ("post", "put", "patch", "delete"):
                statuses += _WRITES
            if method == "post" and path.endswith("/versions"):
                statuses.append("428")
            if path.endswith(_GONE) and (method == "post" or path.endswith(_GONE_READS)):
                statuses.append("410")
            responses = operation.setdefault("responses", {})
            for status in statuses:
                responses.setdefault(status, _problem(status))
    return result


IDEMPOTENCY_KEY: dict[str, Any] = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": 200},
    "description": (
        "A retry with the same key and body gets the first answer again (with "
        "`Idempotent-Replayed: true`); the same key with another body is a 422."
    ),
}
_ETAG = {
    "description": 'The version shown, `"<version>"`: send it back as `If-Match` to correct it.',
    "schema": {"type": "string", "example": '"2"'},
}
_RETRY_AFTER = {
    "description": "Seconds to wait before trying again.",
    "schema": {"type": "integer", "minimum": 1},
}
_MEMORY_REF = "#/components/schemas/MemoryOut"


def document_headers(result: dict[str, Any], **_: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook (after ``document_problems``): every POST takes
    ``Idempotency-Key`` (``api.base``), a memory answer carries its version as ``ETag``,
    and a 429 or 503 says when to come back in ``Retry-After``."""
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method == "post":
                parameters = operation.setdefault("parameters", [])
                if not any(p.get("name") == IDEMPOTENCY_KEY["name"] for p in parameters):
                    parameters.append(IDEMPOTENCY_KEY)
            for status, response in operation.get("responses", {}).items():
                schema = response.get("content", {}).get("application/json", {}).get("schema", {})
                if status in ("429", "503"):
                    response.setdefault("headers", {})["Retry-After"] = _RETRY_AFTER
                elif status.startswith("2") and schema.get("$ref") == _MEMORY_REF:
                    response.setdefault("headers", {})["ETag"] = _ETAG
    return result
