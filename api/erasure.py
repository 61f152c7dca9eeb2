"""Export and erasure of a subject (docs/api.md, Retention and erasure): thin over
``memory.export`` and ``memory.erasure``."""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agent_interface.serializers import StrictInput
from api.base import MemgovAPIView
from api.examples import REQUEST_EXAMPLES
from api.memory import _valid
from api.openapi import ErasureOut, ErasureStartedOut, ExportOut
from core.authority import require_erase
from core.times import iso
from memory.erasure import MAX_REASON, erasure_start
from memory.export import export_subject
from memory.models import Erasure
from memory.selectors import access_erasure


class EraseInput(StrictInput):
    reason = serializers.CharField(max_length=MAX_REASON)


def erasure_representation(erasure: Erasure) -> dict[str, Any]:
    return {
        "id": erasure.pk,
        "subject": erasure.subject_id,
        "status": erasure.status,
        "phase": erasure.phase,
        "counts": erasure.counts,
        "kept": erasure.kept,
        "requested_by": erasure.actor,
        "started_at": iso(erasure.started_at),
        "finished_at": iso(erasure.finished_at),
        "error": erasure.error,
    }


class ExportView(MemgovAPIView):
    @extend_schema(responses={200: ExportOut}, operation_id="entity_export")
    def get(self, request: Request, entity_id: str) -> StreamingHttpResponse:
        chunks = export_subject(self.principal(), entity_id)
        response = StreamingHttpResponse(chunks, content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{entity_id}.json"'
        return response


class EraseView(MemgovAPIView):
    @extend_schema(
        request=EraseInput,
        responses={202: ErasureStartedOut},
        operation_id="entity_erase",
        examples=REQUEST_EXAMPLES["entity_erase"],
    )
    def post(self, request: Request, entity_id: str) -> Response:
        principal = self.principal()
        require_erase(principal)  # before the body is read: an agent learns nothing more
        data = _valid(EraseInput, request)
        erasure = erasure_start(principal=principal, subject_id=entity_id, reason=data["reason"])
        return Response({"erasure": erasure.pk}, status=status.HTTP_202_ACCEPTED)


class ErasureView(MemgovAPIView):
    @extend_schema(responses={200: ErasureOut}, operation_id="erasure_get")
    def get(self, request: Request, erasure_id: str) -> Response:
        return Response(erasure_representation(access_erasure(self.principal(), erasure_id)))
