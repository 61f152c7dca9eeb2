"""The request examples in the OpenAPI description (the seeds' stories) are bodies the
API accepts: each one validates against its operation's published request schema, and
every operation that takes a JSON body has at least one."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from tests.openapi_check import _json_schema, published_schema


def _bodies() -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    found = []
    for path, operations in published_schema()["paths"].items():
        for method, operation in operations.items():
            media = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if media is None:
                continue
            found.append((operation["operationId"], f"{method.upper()} {path}", media, operation))
    return found


def test_every_operation_with_a_json_body_shows_an_example_from_the_stories() -> None:
    missing = [where for _, where, media, _ in _bodies() if not media.get("examples")]
    assert missing == []


@pytest.mark.parametrize(
    ("operation_id", "name", "value"),
    [
        (operation_id, name, example["value"])
        for operation_id, _, media, _ in _bodies()
        for name, example in media.get("examples", {}).items()
    ],
)
def test_each_request_example_matches_its_request_schema(
    operation_id: str, name: str, value: dict[str, Any]
) -> None:
    media = next(m for op, _, m, _ in _bodies() if op == operation_id)
    defs = _json_schema(published_schema()["components"]["schemas"])
    jsonschema.validate(value, {**_json_schema(media["schema"]), "$defs": defs})


def test_task_revalidation_and_scenario_answers_are_typed_not_free_form() -> None:
    paths = published_schema()["paths"]
    for path, method, status in [
        ("/api/v1/tasks/{task_id}", "get", "200"),
        ("/api/v1/revalidations/{job_id}", "get", "200"),
        ("/api/v1/memories/{memory_id}/scenarios", "post", "201"),
    ]:
        schema = paths[path][method]["responses"][status]["content"]["application/json"]
        assert "$ref" in schema["schema"], path
