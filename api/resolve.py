"""Resolve, task records and policy (docs/api.md, Resolve / Tasks / Policy)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ParseError, UnsupportedMediaType
from rest_framework.request import Request
from rest_framework.response import Response

from agent_interface import answers
from agent_interface.auth import ReadsCacheAhead
from agent_interface.serializers import ResolveInput, StrictInput
from api.base import MemgovAPIView
from api.examples import REQUEST_EXAMPLES
from api.memory import _valid
from api.openapi import (
    PolicyOut,
    PublishedPolicyOut,
    ResolutionOut,
    RevalidationOut,
    RevalidationStartedOut,
    TaskOut,
)
from approvals.revalidation import (
    access_revalidation,
    may_see_flagged,
    policy_publish_and_revalidate,
    revalidation_request,
)
from core.redis_client import ScriptCall
from core.times import iso
from memory import selectors


class PolicyInput(StrictInput):
    precedence = serializers.DictField()
    reason = serializers.CharField(max_length=2000)


class RevalidateInput(StrictInput):
    reason = serializers.CharField(max_length=2000)


class ResolveView(ReadsCacheAhead, MemgovAPIView):
    # Set by cache_read_ahead (called by the throttle, before the handler).
    _valid: dict[str, Any] | None = None
    _unreadable: Exception | None = None

    def cache_read_ahead(self, request: Request) -> ScriptCall | None:
        try:
            data = request.data
        except (ParseError, UnsupportedMediaType) as exc:  # the handler raises it
            self._unreadable = exc
            return None
        self._valid, call = answers.resolve_read_ahead(self.principal(), data)
        return call

    @extend_schema(
        request=ResolveInput,
        responses={200: ResolutionOut},
        operation_id="resolve",
        examples=REQUEST_EXAMPLES["resolve"],
    )
    def post(self, request: Request) -> Response:
        if self._unreadable is not None:
            raise self._unreadable
        answer = answers.resolved_encoded(
            self.principal(), request.data, valid=self._valid, prefetched=self.prefetched
        )
        return Response(answer)


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
        job = access_revalidation(principal, job_id)
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
