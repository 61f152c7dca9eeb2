"""Every operation the server publishes has a typed method on both clients (issue 44,
point 12): the live OpenAPI description is enumerated, so an endpoint added without its
client method fails here."""

from __future__ import annotations

import inspect
import typing
from typing import Any

from memgov_client import OPERATIONS, AsyncMemgov, Memgov


def _operation_ids(schema: dict[str, Any]) -> set[str]:
    return {
        operation["operationId"]
        for path in schema["paths"].values()
        for operation in path.values()
        if isinstance(operation, dict) and "operationId" in operation
    }


def test_every_published_operation_has_a_typed_sync_and_async_method(connect):
    published = _operation_ids(connect("agent").openapi_schema())

    assert sorted(published - OPERATIONS.keys()) == []  # published, no client method
    assert sorted(OPERATIONS.keys() - published) == []  # a method for nothing published
    for operation_id, name in sorted(OPERATIONS.items()):
        sync, asyn = getattr(Memgov, name, None), getattr(AsyncMemgov, name, None)
        assert callable(sync), f"{operation_id}: Memgov.{name} is missing"
        assert inspect.iscoroutinefunction(asyn), f"{operation_id}: AsyncMemgov.{name}"
        answer = typing.get_type_hints(sync)["return"]
        assert answer not in (Any, dict[str, Any]), f"{operation_id}: {name} is untyped"
        assert typing.get_type_hints(asyn)["return"] == answer, operation_id
