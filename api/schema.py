"""OpenAPI extensions (drf-spectacular): the API-key authentication, and request bodies
that say they take no member beyond the ones listed."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension


class ApiKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "contract.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "bearerFormat": "mg_<prefix>_<secret>"}


class StrictInputScheme(OpenApiSerializerExtension):  # type: ignore[no-untyped-call]
    """A ``StrictInput`` refuses any member it does not declare (422): the schema says so,
    as the MCP tools' input schemas do."""

    target_class = "contract.serializers.StrictInput"
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer(
            self.target, direction, bypass_extensions=True
        )
        return {**schema, "additionalProperties": False}
