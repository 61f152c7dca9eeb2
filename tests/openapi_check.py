"""Checks real responses against the OpenAPI description (issue 11, point 6): a test-only
middleware validates every ``/api/v1/`` JSON answer against the schema the service
publishes, so a declared object that is really an array, or a null where none is allowed,
fails the test that produced it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from typing import Any

import jsonschema
from django.http import HttpRequest, HttpResponse
from drf_spectacular.generators import SchemaGenerator


@cache
def published_schema() -> dict[str, Any]:
    schema: dict[str, Any] = SchemaGenerator().get_schema(request=None, public=True)
    plain: dict[str, Any] = json.loads(json.dumps(schema, default=str))
    return plain


def _json_schema(node: Any) -> Any:
    """OpenAPI 3.0 to JSON Schema: ``nullable`` becomes a null alternative."""
    if isinstance(node, list):
        return [_json_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k != "nullable"}
    if "$ref" in out:
        out["$ref"] = out["$ref"].replace("#/components/schemas/", "#/$defs/")
    if node.get("nullable"):
        return {"anyOf": [out, {"type": "null"}]}
    return out


@cache
def _operations() -> list[tuple[re.Pattern[str], str, dict[str, Any]]]:
    found = []
    # A literal path (``/entities/kinds``) before a template it also matches
    # (``/entities/{entity_id}``), as Django's URL patterns are ordered.
    paths = sorted(published_schema()["paths"].items(), key=lambda item: item[0].count("{"))
    for path, operations in paths:
        pattern = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$")
        for method, operation in operations.items():
            found.append((pattern, method, operation))
    return found


@cache
def _validator(schema_json: str) -> Any:
    """One compiled validator per declared answer: checking the schema and converting the
    components on every response made the suite spend most of its time in jsonschema."""
    defs = _json_schema(published_schema()["components"]["schemas"])
    schema = {**_json_schema(json.loads(schema_json)), "$defs": defs}
    validator_class = jsonschema.validators.validator_for(schema)
    return validator_class(schema)


def response_violation(method: str, path: str, status: int, body: Any) -> str | None:
    """Why ``body`` does not match what the schema declares for this answer, or None."""
    for pattern, declared_method, operation in _operations():
        if declared_method == method.lower() and pattern.match(path):
            declared = operation["responses"].get(str(status))
            if declared is None:
                return f"{method} {path}: status {status} is not documented"
            content = declared.get("content") or {}
            media: dict[str, Any] = next(iter(content.values()), {})
            if "schema" not in media:
                return None
            error = jsonschema.exceptions.best_match(
                _validator(json.dumps(media["schema"], sort_keys=True)).iter_errors(body)
            )
            if error is not None:
                where = "/".join(str(p) for p in error.absolute_path)
                return f"{method} {path} {status} at '{where}': {error.message}"
            return None
    return None  # not an operation of the schema (e.g. an unknown route's 404)


class ResponseSchemaMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        content_type = response.get("Content-Type", "")
        if not (request.path.startswith("/api/v1/") and "json" in content_type):
            return response
        if response.streaming:  # a streamed document (export): read it, then hand it on
            body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
            response.streaming_content = [body]  # type: ignore[attr-defined]
        else:
            body = response.content
        if body:
            violation = response_violation(
                request.method or "GET",
                request.path,
                response.status_code,
                json.loads(body),
            )
            if violation:
                raise AssertionError(f"response does not match the OpenAPI schema: {violation}")
        return response
