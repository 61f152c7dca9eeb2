"""Review decisions over the API (docs/api.md, Memories and Sources). Same services and
``access_*`` selectors as the dashboard."""

from __future__ import annotations

import json
from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agent_interface import answers
from agent_interface.serializers import LabelListField, ScenarioInput, StrictInput
from api.base import MemgovAPIView
from api.examples import REQUEST_EXAMPLES
from api.memory import _answer_response, _valid
from api.openapi import (
    CheckOut,
    MemoryOut,
    RetiredOut,
    ScenarioListOut,
    ScenarioOut,
    SourceOut,
)
from approvals import services, wording
from approvals.models import CheckResult, ScenarioRemoval
from core.times import iso
from memory import selectors
from memory.models import Scenario
from memory.representations import source_representation


class CommentInput(StrictInput):
    comment = serializers.CharField(max_length=4000, required=False, allow_blank=True)


class ReasonInput(StrictInput):
    reason = serializers.CharField(max_length=4000)


class RetireInput(ReasonInput):
    in_flight = serializers.ChoiceField(choices=["reverify", "continue"], required=False)


class VisibilityInput(ReasonInput):
    visibility = LabelListField(min_length=1, max_length=100)


class LinkInput(StrictInput):
    subject = serializers.CharField(max_length=40)


class NoInput(StrictInput):
    """An operation that takes no members: a body that names one is refused, not ignored."""


def _head(view: MemgovAPIView, memory_id: str) -> Response:
    return _answer_response(answers.memory_head_answer(view.principal(), memory_id))


class ApproveView(MemgovAPIView):
    @extend_schema(
        request=CommentInput,
        responses={200: MemoryOut},
        operation_id="memory_approve",
        examples=REQUEST_EXAMPLES["memory_approve"],
    )
    def post(self, request: Request, memory_id: str) -> Response:
        item = selectors.access_memory(self.principal(), memory_id)
        data = _valid(CommentInput, request)
        services.version_approve(
            principal=self.principal(), item=item, comment=data.get("comment", "")
        )
        return _head(self, memory_id)


class RejectView(MemgovAPIView):
    @extend_schema(
        request=ReasonInput,
        responses={200: MemoryOut},
        operation_id="memory_reject",
        examples=REQUEST_EXAMPLES["memory_reject"],
    )
    def post(self, request: Request, memory_id: str) -> Response:
        item = selectors.access_memory(self.principal(), memory_id)
        data = _valid(ReasonInput, request)
        services.version_reject(principal=self.principal(), item=item, reason=data["reason"])
        return _head(self, memory_id)


class RetireView(MemgovAPIView):
    @extend_schema(
        request=RetireInput,
        responses={200: RetiredOut},
        operation_id="memory_retire",
        examples=REQUEST_EXAMPLES["memory_retire"],
    )
    def post(self, request: Request, memory_id: str) -> Response:
        item = selectors.access_memory(self.principal(), memory_id)
        data = _valid(RetireInput, request)
        flagged = services.memory_retire(
            principal=self.principal(),
            item=item,
            reason=data["reason"],
            in_flight=data.get("in_flight", "reverify"),
        )
        memory = _head(self, memory_id).data
        return Response({"memory": memory, "flagged_tasks": flagged})


class RecheckView(MemgovAPIView):
    @extend_schema(request=None, responses={200: MemoryOut}, operation_id="memory_recheck")
    def post(self, request: Request, memory_id: str) -> Response:
        item = selectors.access_memory(self.principal(), memory_id)
        _valid(NoInput, request)
        services.version_recheck(principal=self.principal(), item=item)
        return _head(self, memory_id)


def scenario_representation(scenario: Scenario, removal: ScenarioRemoval | None) -> dict[str, Any]:
    return {
        "id": scenario.pk,
        **scenario.as_dict(),
        "created_by": scenario.created_by,
        "version": scenario.version.number,
        "removed": None
        if removal is None
        else {"by": removal.removed_by, "reason": removal.reason, "at": iso(removal.removed_at)},
    }


class ScenariosView(MemgovAPIView):
    @extend_schema(responses={200: ScenarioListOut}, operation_id="memory_scenarios")
    def get(self, request: Request, memory_id: str) -> Response:
        """The custom scenarios of the lineage up to its head, oldest first: those in force
        and those removed (``removed`` says by whom, why and when)."""
        item = selectors.access_memory(self.principal(), memory_id)
        scenarios = (
            Scenario.objects.filter(version__item=item, version__number__lte=item.head_version)
            .select_related("version")
            .order_by("pk")
        )
        removals = {
            r.scenario_id: r for r in ScenarioRemoval.objects.filter(scenario__in=scenarios)
        }
        return Response(
            {"results": [scenario_representation(s, removals.get(s.pk)) for s in scenarios]}
        )

    @extend_schema(
        request=ScenarioInput,
        responses={201: ScenarioOut},
        operation_id="memory_scenario_add",
        examples=REQUEST_EXAMPLES["memory_scenario_add"],
    )
    def post(self, request: Request, memory_id: str) -> Response:
        item = selectors.access_memory(self.principal(), memory_id)
        data = _valid(ScenarioInput, request)
        scenario = services.scenario_add(principal=self.principal(), item=item, data=data)
        return Response(scenario_representation(scenario, None), status=status.HTTP_201_CREATED)


class ScenarioRemoveView(MemgovAPIView):
    @extend_schema(
        request=ReasonInput,
        responses={200: ScenarioOut},
        operation_id="memory_scenario_remove",
        examples=REQUEST_EXAMPLES["memory_scenario_remove"],
    )
    def post(self, request: Request, memory_id: str, scenario_id: int) -> Response:
        """Remove a custom scenario before activation (the proposer or a reviewer)."""
        item = selectors.access_memory(self.principal(), memory_id)
        data = _valid(ReasonInput, request)
        removal = services.scenario_remove(
            principal=self.principal(), item=item, scenario_id=scenario_id, reason=data["reason"]
        )
        return Response(scenario_representation(removal.scenario, removal))


def check_representation(result: CheckResult) -> dict[str, Any]:
    return {
        "scenario": result.scenario,
        "generated": result.generated,
        "run": result.run,
        "outcome": result.outcome,
        "detail": result.detail,
        "impact": result.impact,
        "policy_version": result.policy_version,
        "ran_at": iso(result.ran_at),
        "version": result.version.number,
    }


class ChecksView(MemgovAPIView):
    @extend_schema(responses={200: CheckOut(many=True)}, operation_id="memory_checks")
    def get(self, request: Request, memory_id: str) -> Response:
        reader = self.principal()
        item = selectors.access_memory(reader, memory_id)
        results = list(
            CheckResult.objects.filter(version__item=item)
            .select_related("version")
            .order_by("version__number", "ran_at", "pk")
        )
        listed = [check_representation(r) for r in results]
        if not results:
            return Response(listed)
        # The engine names other memories by id: none the reader may not see (issue 44).
        texts = [json.dumps(r, ensure_ascii=False) for r in listed]
        hidden = wording.hidden_memories(results[0].version, reader, texts)
        return Response(wording.without_hidden(listed, hidden))


class LinkSubjectView(MemgovAPIView):
    @extend_schema(
        request=LinkInput,
        responses={200: MemoryOut},
        operation_id="memory_link_subject",
        examples=REQUEST_EXAMPLES["memory_link_subject"],
    )
    def post(self, request: Request, memory_id: str) -> Response:
        item = selectors.access_memory(self.principal(), memory_id)
        data = _valid(LinkInput, request)
        services.memory_link_subject(
            principal=self.principal(), item=item, subject_id=data["subject"]
        )
        return _head(self, memory_id)


class SourceRevokeView(MemgovAPIView):
    @extend_schema(
        request=ReasonInput,
        operation_id="source_revoke",
        examples=REQUEST_EXAMPLES["source_revoke"],
        responses={
            200: inline_serializer(
                "Revoked",
                fields={"source": serializers.CharField(), "memories": serializers.ListField()},
            )
        },
    )
    def post(self, request: Request, source_id: str) -> Response:
        source = selectors.access_source(self.principal(), source_id)
        data = _valid(ReasonInput, request)
        affected = services.source_revoke(
            principal=self.principal(), source=source, reason=data["reason"]
        )
        return Response(
            {
                "source": source.pk,
                "memories": affected,
                "revoked_at": iso(selectors.access_source(self.principal(), source_id).revoked_at),
            }
        )


class SourceVisibilityView(MemgovAPIView):
    @extend_schema(
        request=VisibilityInput,
        operation_id="source_visibility_change",
        examples=REQUEST_EXAMPLES["source_visibility_change"],
        description=(
            "The original data's access changed: set the source's visibility labels "
            "(user with retire_memory). Every memory built on it follows on the next "
            "resolve. Answers the source."
        ),
        responses={200: SourceOut},
    )
    def post(self, request: Request, source_id: str) -> Response:
        principal = self.principal()
        source = selectors.access_source(principal, source_id)
        data = _valid(VisibilityInput, request)
        changed = services.source_visibility_change(
            principal=principal,
            source=source,
            visibility=data["visibility"],
            reason=data["reason"],
        )
        return Response(source_representation(changed))
