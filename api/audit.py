"""The audit trail over the API: readers need ``view_audit`` on the tenant."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agent_interface.serializers import ZonedDateTimeField
from api.base import MemgovAPIView
from api.pagination import PAGE_PARAMETERS, paginate, text_parameter
from audit.representations import event_representation
from audit.selectors import Problem, audit_events, audit_verify, require_view_audit
from core.errors import InvalidContent


class AuditListView(MemgovAPIView):
    query_parameters = ("target", "actor", "action", "since", "limit", "cursor")

    @extend_schema(
        parameters=[
            text_parameter("target"),
            text_parameter("actor"),
            text_parameter("action"),
            OpenApiParameter("since", OpenApiTypes.DATETIME, required=False),
            *PAGE_PARAMETERS,
        ],
        responses={
            200: inline_serializer(
                "AuditPage",
                fields={
                    "results": serializers.ListField(child=serializers.DictField()),
                    "next": serializers.URLField(allow_null=True),
                },
            )
        },
        operation_id="audit_list",
    )
    def get(self, request: Request) -> Response:
        principal = self.principal()
        require_view_audit(principal)
        params = request.query_params
        since = None
        if params.get("since"):
            field = ZonedDateTimeField()
            try:
                since = field.to_internal_value(params["since"])
            except serializers.ValidationError as exc:
                raise InvalidContent({"since": ["must be an RFC 3339 time with a zone"]}) from exc
        events = audit_events(
            tenant=principal.tenant,
            target=params.get("target"),
            actor=params.get("actor"),
            action=params.get("action"),
            since=since,
        )
        return Response(
            paginate(request, events, key="seq", represent=event_representation, key_type=int)
        )


class AuditVerifyView(MemgovAPIView):
    @extend_schema(
        responses={
            200: inline_serializer(
                "AuditVerification",
                fields={
                    "ok": serializers.BooleanField(),
                    "events_checked": serializers.IntegerField(),
                    "first_bad_seq": serializers.IntegerField(allow_null=True),
                    "reason": serializers.ChoiceField(
                        choices=[p.value for p in Problem], allow_null=True
                    ),
                    "keyed_from": serializers.IntegerField(allow_null=True),
                    "missing_key_ids": serializers.ListField(child=serializers.CharField()),
                },
            )
        },
        operation_id="audit_verify",
    )
    def get(self, request: Request) -> Response:
        principal = self.principal()
        require_view_audit(principal)
        result = audit_verify(tenant=principal.tenant)
        return Response(
            {
                "ok": result.ok,
                "events_checked": result.events_checked,
                "first_bad_seq": result.first_bad_seq,
                "reason": result.reason,
                "keyed_from": result.keyed_from,
                "missing_key_ids": list(result.missing_key_ids),
            }
        )
