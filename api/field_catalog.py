"""The field catalog (docs/api.md, Field catalog): read by every key, written by a tenant
admin (``core.authority.require_manage_fields``)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agent_interface import catalog
from agent_interface.catalog import FIELD_NAME_RE, FieldInput
from api.base import MemgovAPIView
from api.openapi import FieldListOut, FieldOut

EXAMPLES = [
    OpenApiExample(
        "order-address",
        summary="Seed 002: the order service holds an order's delivery address",
        value={
            "description": "Where an order is delivered.",
            "value_schema": {"type": "string", "minLength": 3},
            "kinds": ["task_fact", "preference"],
            "required_scope": [],
            "default_expiry_days": 30,
            "authoritative_system": {
                "name": "Order service",
                "url": "https://orders.example.com/api/orders",
                "tool": "orders.get_order",
            },
        },
        request_only=True,
    )
]


# A name the catalog cannot hold is a 422 naming it: the schema says which names it holds.
NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, pattern=FIELD_NAME_RE.pattern)


class FieldCollectionView(MemgovAPIView):
    @extend_schema(responses={200: FieldListOut}, operation_id="field_list")
    def get(self, request: Request) -> Response:
        return Response(catalog.field_listed(self.principal()))


class FieldDetailView(MemgovAPIView):
    @extend_schema(parameters=[NAME], responses={200: FieldOut}, operation_id="field_get")
    def get(self, request: Request, name: str) -> Response:
        return Response(catalog.field_read(self.principal(), name))

    @extend_schema(
        request=FieldInput,
        parameters=[NAME],
        responses={200: FieldOut},
        operation_id="field_define",
        examples=EXAMPLES,
    )
    def put(self, request: Request, name: str) -> Response:
        return Response(catalog.field_defined(self.principal(), name, request.data))
