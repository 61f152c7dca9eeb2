"""Resolve, task records and policy (API.md, Resolve / Tasks / Policy)."""

from __future__ import annotations

from typing import Any, ClassVar

import orjson
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import MemgovAPIView
from api.memory import _valid
from api.openapi import (
    REQUEST_EXAMPLES,
    PolicyOut,
    PublishedPolicyOut,
    ResolutionOut,
    RevalidationOut,
    RevalidationStartedOut,
    TaskOut,
)
from approvals.models import Revalidation
from approvals.revalidation import (
    may_see_flagged,
    policy_publish_and_revalidate,
    revalidation_request,
)
from core.errors import NotFound
from core.inputs import strict_int
from core.times import iso
from memory import answers, selectors
from memory.auth import ApiKeyAuthentication
from memory.serializers import ResolveInput, StrictInput, plain_resolve_input


class PolicyInput(StrictInput):
    precedence = serializers.DictField()
    reason = serializers.CharField(max_length=2000)


class RevalidateInput(StrictInput):
    reason = serializers.CharField(max_length=2000)


PLAIN_BODY_BYTES = 64 * 1024


def plain_call(request: HttpRequest) -> tuple[str, dict[str, Any]] | None:
    """The bearer key and the validated input when the request is the one agents send on
    every call: a small JSON body that ``plain_resolve_input`` takes, JSON accepted back,
    no ``Idempotency-Key``, no query string (which resolve refuses). Anything else is
    None: DRF's full path then answers it, errors and all, exactly as for every other
    operation."""
    meta = request.META
    scheme, _, raw_key = meta.get("HTTP_AUTHORIZATION", "").partition(" ")
    raw_key = raw_key.strip()
    if (
        request.method != "POST"
        or scheme != ApiKeyAuthentication.keyword
        or not raw_key
        or "HTTP_IDEMPOTENCY_KEY" in meta
        or meta.get("QUERY_STRING")
        or meta.get("HTTP_ACCEPT", "*/*") not in ("*/*", "application/json")
        or request.content_type != "application/json"
        or (request.content_params or {}).get("charset", "utf-8").lower() not in ("utf-8", "utf8")
    ):
        return None
    length = strict_int(meta.get("CONTENT_LENGTH", ""))
    if length is None or not 0 < length <= PLAIN_BODY_BYTES:
        return None
    try:
        valid = plain_resolve_input(orjson.loads(request.body))
    except orjson.JSONDecodeError:
        return None
    return None if valid is None else (raw_key, valid)


def _json(body: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(body)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits: DRF's encoder writes it
        return JSONRenderer().render(body)


class ResolveView(MemgovAPIView):
    # DRF's default headers (Allow, Vary) are the class's: worked out once for the hot path.
    _plain_headers: ClassVar[dict[str, str] | None] = None

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        """Resolve is the call agents make before every task: its usual request skips
        DRF's negotiation, parsing, serializer and rendering, and the round trips the
        hot path shares (``answers.resolved_for_key``), and gets the same answer. Every
        other request, and every refusal, goes through DRF."""
        call = plain_call(request)
        if call is None:
            return super().dispatch(request, *args, **kwargs)
        try:
            body = answers.resolved_for_key(*call)
        except answers.PassOn:
            return super().dispatch(request, *args, **kwargs)
        except Exception as exc:  # answered as DRF answers it, or re-raised (a 500)
            self.args, self.kwargs = args, kwargs
            self.request = self.initialize_request(request, *args, **kwargs)
            self.headers = self.default_response_headers
            failed = self.finalize_response(self.request, self.handle_exception(exc))
            return failed  # type: ignore[no-any-return]
        headers = ResolveView._plain_headers
        if headers is None:
            headers = ResolveView._plain_headers = self.default_response_headers
        return HttpResponse(
            body if isinstance(body, bytes) else _json(body),
            content_type="application/json",
            headers=headers,
        )

    @extend_schema(
        request=ResolveInput,
        responses={200: ResolutionOut},
        operation_id="resolve",
        examples=REQUEST_EXAMPLES["resolve"],
    )
    def post(self, request: Request) -> Response:
        return Response(answers.resolved(self.principal(), request.data))


class TaskView(MemgovAPIView):
    @extend_schema(responses={200: TaskOut}, operation_id="task_get")
    def get(self, request: Request, task_id: str) -> Response:
        return Response(answers.task_checked(self.principal(), task_id))


def _policy_body(policy: Any) -> dict[str, Any]:
    return {
        "version": str(policy.version),
        "precedence": policy.precedence,
        "published_at": iso(policy.published_at),
        "published_by": policy.published_by,
        "reason": policy.reason,
    }


class PolicyView(MemgovAPIView):
    @extend_schema(responses={200: PolicyOut}, operation_id="policy_get")
    def get(self, request: Request) -> Response:
        tenant = self.principal().tenant
        body = _policy_body(selectors.current_policy(tenant))
        return Response({**body, "revalidation_failure": tenant.revalidation_failure})

    @extend_schema(
        request=PolicyInput,
        responses={201: PublishedPolicyOut},
        operation_id="policy_publish",
        examples=REQUEST_EXAMPLES["policy_publish"],
    )
    def post(self, request: Request) -> Response:
        principal = self.principal()
        data = _valid(PolicyInput, request)
        policy, job = policy_publish_and_revalidate(
            principal=principal, precedence=data["precedence"], reason=data["reason"]
        )
        return Response(
            {**_policy_body(policy), "revalidation": job.pk}, status=status.HTTP_201_CREATED
        )


class RevalidateView(MemgovAPIView):
    @extend_schema(
        request=RevalidateInput,
        responses={202: RevalidationStartedOut},
        operation_id="policy_revalidate",
        examples=REQUEST_EXAMPLES["policy_revalidate"],
    )
    def post(self, request: Request) -> Response:
        data = _valid(RevalidateInput, request)
        job = revalidation_request(principal=self.principal(), reason=data["reason"])
        return Response({"revalidation": job.pk}, status=status.HTTP_202_ACCEPTED)


class RevalidationView(MemgovAPIView):
    @extend_schema(responses={200: RevalidationOut}, operation_id="revalidation_get")
    def get(self, request: Request, job_id: str) -> Response:
        principal = self.principal()
        job = Revalidation.objects.filter(tenant=principal.tenant, pk=job_id).first()
        if job is None:
            raise NotFound(f"No revalidation {job_id}.")
        body: dict[str, Any] = {}
        if may_see_flagged(principal):  # an agent key sees progress and counts only
            body["flagged"] = job.flagged
        return Response(
            {
                **body,
                "id": job.pk,
                "status": job.status,
                "total": job.total,
                "done": job.done,
                "failed": job.failed,
                "reason": job.reason,
                "policy_version": job.policy_version,
                "started_at": iso(job.started_at),
                "finished_at": iso(job.finished_at),
            }
        )
