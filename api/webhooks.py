"""Webhook endpoints over the API (docs/api.md, Webhooks): people with ``manage_webhooks``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agent_interface.serializers import StrictInput
from api.base import MemgovAPIView
from api.examples import REQUEST_EXAMPLES
from api.memory import _valid
from api.openapi import (
    WebhookDeliveryPageOut,
    WebhookEnabledOut,
    WebhookOut,
    WebhookPageOut,
    WebhookWithSecretOut,
)
from api.pagination import PAGE_PARAMETERS, paginate
from core.times import iso
from memory.events import EVENT_TYPES
from webhooks import services
from webhooks.addresses import MAX_URL_CHARS
from webhooks.models import WebhookDelivery, WebhookEndpoint

PAGE_QUERY = ("limit", "cursor")


class WebhookInput(StrictInput):
    url = serializers.CharField(max_length=MAX_URL_CHARS)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=list(EVENT_TYPES)), min_length=1, max_length=20
    )
    description = serializers.CharField(max_length=500, required=False, allow_blank=True)


class RotateInput(StrictInput):
    previous_valid_for_seconds = serializers.IntegerField(
        min_value=0,
        max_value=int(services.ROTATION_GRACE.total_seconds()),
        required=False,
        help_text="How long the previous secret keeps signing too (default 24 hours).",
    )


class EnableInput(StrictInput):
    """No members: any member sent is a 422 naming it."""


def webhook_representation(endpoint: WebhookEndpoint) -> dict[str, Any]:
    return {
        "id": endpoint.pk,
        "url": endpoint.url,
        "description": endpoint.description,
        "events": list(endpoint.events),
        "status": endpoint.status,
        "disabled_at": iso(endpoint.disabled_at),
        "disabled_reason": endpoint.disabled_reason,
        "created_by": endpoint.created_by.get_username(),
        "created_at": iso(endpoint.created_at),
        "previous_secret_valid_until": iso(endpoint.previous_secret_until)
        if endpoint.previous_secret
        else None,
    }


def _with_secret(endpoint: WebhookEndpoint) -> dict[str, Any]:
    return {**webhook_representation(endpoint), "secret": endpoint.secret}


def delivery_representation(delivery: WebhookDelivery) -> dict[str, Any]:
    return {
        "id": delivery.pk,
        "event_id": delivery.event_id,
        "event_type": delivery.event_type,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "created_at": iso(delivery.created_at),
        "next_attempt_at": iso(delivery.next_attempt_at),
        "delivered_at": iso(delivery.delivered_at),
        "last_status_code": delivery.last_status_code,
        "last_error": delivery.last_error,
        "log": [
            {
                "attempt": attempt.number,
                "at": iso(attempt.at),
                "status_code": attempt.status_code,
                "latency_ms": attempt.latency_ms,
                "error": attempt.error,
            }
            for attempt in delivery.attempt_log.all()
        ],
    }


class WebhookCollectionView(MemgovAPIView):
    query_parameters = PAGE_QUERY

    @extend_schema(
        request=WebhookInput,
        responses={201: WebhookWithSecretOut},
        operation_id="webhook_create",
        examples=REQUEST_EXAMPLES["webhook_create"],
        description="A new endpoint; the answer carries its signing secret, shown only once.",
    )
    def post(self, request: Request) -> Response:
        principal = self.principal()
        services.require_manage_webhooks(principal)
        data = _valid(WebhookInput, request)
        endpoint = services.webhook_create(
            principal=principal,
            url=data["url"],
            events=data["events"],
            description=data.get("description", ""),
        )
        endpoint = services.access_webhook(principal, endpoint.pk)
        return Response(_with_secret(endpoint), status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=PAGE_PARAMETERS, responses={200: WebhookPageOut}, operation_id="webhook_list"
    )
    def get(self, request: Request) -> Response:
        endpoints = services.webhooks_of(self.principal())
        return Response(paginate(request, endpoints, key="id", represent=webhook_representation))


class WebhookDetailView(MemgovAPIView):
    @extend_schema(responses={200: WebhookOut}, operation_id="webhook_get")
    def get(self, request: Request, webhook_id: str) -> Response:
        return Response(
            webhook_representation(services.access_webhook(self.principal(), webhook_id))
        )

    @extend_schema(responses={204: None}, operation_id="webhook_delete")
    def delete(self, request: Request, webhook_id: str) -> Response:
        principal = self.principal()
        endpoint = services.access_webhook(principal, webhook_id)
        services.webhook_delete(principal=principal, endpoint=endpoint)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookRotateSecretView(MemgovAPIView):
    @extend_schema(
        request=RotateInput,
        responses={200: WebhookWithSecretOut},
        operation_id="webhook_rotate_secret",
        examples=REQUEST_EXAMPLES["webhook_rotate_secret"],
        description=(
            "A new signing secret, shown once. The previous one keeps signing beside it "
            "for previous_valid_for_seconds (default 24 hours), so receivers can switch."
        ),
    )
    def post(self, request: Request, webhook_id: str) -> Response:
        principal = self.principal()
        endpoint = services.access_webhook(principal, webhook_id)
        data = _valid(RotateInput, request) if request.data else {}
        grace = data.get("previous_valid_for_seconds")
        rotated = services.webhook_rotate_secret(
            principal=principal,
            endpoint=endpoint,
            grace=services.ROTATION_GRACE if grace is None else timedelta(seconds=grace),
        )
        return Response(_with_secret(rotated))


class WebhookEnableView(MemgovAPIView):
    @extend_schema(
        request=EnableInput,
        responses={200: WebhookEnabledOut},
        operation_id="webhook_enable",
        description=(
            "Deliver to a disabled endpoint again. The events recorded while it was "
            "disabled (and those it was given up on) are sent first, oldest first, with "
            "their own webhook-id; those held longer than the retention (7 days) are "
            "dropped. held_released and held_dropped count them. 409 when it is not "
            "disabled."
        ),
    )
    def post(self, request: Request, webhook_id: str) -> Response:
        principal = self.principal()
        endpoint = services.access_webhook(principal, webhook_id)
        if request.data:
            _valid(EnableInput, request)
        enabled = services.webhook_enable(principal=principal, endpoint=endpoint)
        return Response(
            {
                **webhook_representation(enabled.endpoint),
                "held_released": enabled.released,
                "held_dropped": enabled.dropped,
            }
        )


class WebhookDeliveriesView(MemgovAPIView):
    query_parameters = PAGE_QUERY

    @extend_schema(
        parameters=PAGE_PARAMETERS,
        responses={200: WebhookDeliveryPageOut},
        operation_id="webhook_deliveries",
        description="The delivery log, oldest first: each attempt's status code, latency, error.",
    )
    def get(self, request: Request, webhook_id: str) -> Response:
        endpoint = services.access_webhook(self.principal(), webhook_id)
        deliveries = WebhookDelivery.objects.filter(endpoint=endpoint).prefetch_related(
            "attempt_log"
        )
        return Response(paginate(request, deliveries, key="id", represent=delivery_representation))
