"""The context block and clarification (docs/api.md, Context / Clarification): thin over
``agent_interface.context``, which the MCP tools call too."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from agent_interface import context
from agent_interface.context import ClarifyInput, ContextInput
from api.base import MemgovAPIView
from api.openapi import ContextOut, MemoryOut

_DANA = "ent_01j9dana0000000000000000"


def _example(name: str, summary: str, value: dict[str, object]) -> OpenApiExample:
    return OpenApiExample(name, summary=summary, value=value, request_only=True)


class ContextView(MemgovAPIView):
    @extend_schema(
        request=ContextInput,
        responses={200: ContextOut},
        operation_id="context_build",
        examples=[
            _example(
                "before-dispatch",
                "Seed 002: what the agent may rely on before dispatching order-a",
                {
                    "subjects": [_DANA],
                    "context": {"task": "order-a"},
                    "purpose": "action",
                    "max_tokens": 400,
                    "task_id": "dispatch-order-a",
                },
            )
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(context.context_built(self.principal(), request.data))


class ClarifyView(MemgovAPIView):
    @extend_schema(
        request=ClarifyInput,
        responses={200: MemoryOut},
        operation_id="memory_clarify",
        examples=[
            _example(
                "there-is-the-office",
                'Seed 002: "send it there" meant the office address (option 2)',
                {"choice": "opt_2"},
            )
        ],
    )
    def post(self, request: Request, memory_id: str) -> Response:
        answer = context.memory_clarified(self.principal(), memory_id, request.data)
        return Response(answer.body, headers={"ETag": answer.etag})
