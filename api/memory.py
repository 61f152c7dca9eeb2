"""REST endpoints for sources, entities and memories (docs/api.md). Thin: parse, call, represent."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agent_interface import answers, discovery
from agent_interface.serializers import (
    AliasInput,
    CorrectionInput,
    EntityInput,
    MatchInput,
    ProposalInput,
    SourceInput,
)
from api.base import MemgovAPIView
from api.examples import REQUEST_EXAMPLES
from api.openapi import (
    EntityOut,
    EntityPageOut,
    MatchOut,
    MemoryOut,
    MemoryPageOut,
    SourceOut,
)
from api.pagination import PAGE_PARAMETERS, paginate, text_parameter
from core.errors import InvalidContent
from core.kinds import MemoryKind
from memory import selectors
from memory.models import Status
from memory.representations import (
    entity_representation,
    memory_representation,
    source_representation,
)
from memory.rules import DIMENSION_RE

# Responses are documented as JSON objects; their members are listed in docs/api.md.


def _valid(serializer_class: type[serializers.Serializer[Any]], request: Request) -> dict[str, Any]:
    return answers.validated(serializer_class, request.data)


def _answer_response(answer: answers.MemoryAnswer, status_code: int = 200) -> Response:
    return Response(answer.body, status=status_code, headers={"ETag": answer.etag})


class SourceCollectionView(MemgovAPIView):
    @extend_schema(
        request=SourceInput,
        responses={201: SourceOut},
        operation_id="source_record",
        examples=REQUEST_EXAMPLES["source_record"],
    )
    def post(self, request: Request) -> Response:
        body = answers.source_recorded(self.principal(), request.data)
        return Response(body, status=status.HTTP_201_CREATED)


class SourceDetailView(MemgovAPIView):
    @extend_schema(responses={200: SourceOut}, operation_id="source_get")
    def get(self, request: Request, source_id: str) -> Response:
        return Response(source_representation(selectors.access_source(self.principal(), source_id)))


class EntityCollectionView(MemgovAPIView):
    query_parameters = ("q", "limit", "cursor")

    @extend_schema(
        parameters=[text_parameter("q", "part of a name or alias"), *PAGE_PARAMETERS],
        responses={200: EntityPageOut},
        operation_id="entity_list",
    )
    def get(self, request: Request) -> Response:
        """Every entity of the tenant by id, or those whose name or an alias contains ``q``."""
        entities = selectors.entity_list(self.principal(), request.query_params.get("q", ""))
        return Response(paginate(request, entities, key="id", represent=entity_representation))

    @extend_schema(
        request=EntityInput,
        responses={201: EntityOut},
        operation_id="entity_create",
        examples=REQUEST_EXAMPLES["entity_create"],
    )
    def post(self, request: Request) -> Response:
        body = discovery.entity_created(self.principal(), _valid(EntityInput, request))
        return Response(body, status=status.HTTP_201_CREATED)


class EntityDetailView(MemgovAPIView):
    @extend_schema(responses={200: EntityOut}, operation_id="entity_get")
    def get(self, request: Request, entity_id: str) -> Response:
        return Response(entity_representation(selectors.access_entity(self.principal(), entity_id)))


class EntityAliasView(MemgovAPIView):
    @extend_schema(
        request=AliasInput,
        responses={201: EntityOut},
        operation_id="entity_alias_add",
        examples=REQUEST_EXAMPLES["entity_alias_add"],
    )
    def post(self, request: Request, entity_id: str) -> Response:
        principal = self.principal()
        selectors.access_entity(principal, entity_id)  # another tenant's: 404 before a 422
        body = discovery.alias_added(principal, entity_id, _valid(AliasInput, request))
        return Response(body, status=status.HTTP_201_CREATED)


class EntityMatchView(MemgovAPIView):
    @extend_schema(
        request=MatchInput,
        responses={200: MatchOut},
        operation_id="entity_match",
        examples=REQUEST_EXAMPLES["entity_match"],
    )
    def post(self, request: Request) -> Response:
        return Response(answers.entity_matched(self.principal(), request.data))


def _memory_filters(request: Request) -> selectors.MemoryFilters:
    params = request.query_params
    errors: dict[str, list[str]] = {}
    if params.get("kind") and params["kind"] not in MemoryKind.values:
        errors["kind"] = [f"must be one of {', '.join(MemoryKind.values)}"]
    if params.get("status") and params["status"] not in Status.values:
        errors["status"] = [f"must be one of {', '.join(Status.values)}"]
    scope = {k.removeprefix("scope."): str(v) for k, v in params.items() if k.startswith("scope.")}
    for dimension in scope:
        if not DIMENSION_RE.match(dimension):
            errors[f"scope.{dimension}"] = ["must name a scope dimension, e.g. scope.project"]
    if errors:
        raise InvalidContent(errors)
    return selectors.MemoryFilters(
        subject=params.get("subject"),
        field=params.get("field"),
        kind=params.get("kind"),
        status=params.get("status"),
        owner=params.get("owner"),
        scope=scope,
    )


# The version read, as ETag gave it (memory.proposals reads it; anything else is a 422).
IF_MATCH_PATTERN = r'^(W/)?"?[0-9]{1,9}"?$'
MEMORY_FILTERS = ("subject", "field", "kind", "status", "owner", "limit", "cursor")
_LIST_PARAMS = [
    text_parameter("subject"),
    text_parameter("field"),
    text_parameter("kind", enum=MemoryKind.values, pattern=None),
    text_parameter("status", enum=Status.values, pattern=None),
    text_parameter("owner"),
    *PAGE_PARAMETERS,
]


class MemoryCollectionView(MemgovAPIView):
    query_parameters = MEMORY_FILTERS
    query_prefixes = ("scope.",)

    @extend_schema(
        parameters=_LIST_PARAMS, responses={200: MemoryPageOut}, operation_id="memory_list"
    )
    def get(self, request: Request) -> Response:
        principal = self.principal()
        heads = selectors.memory_heads(principal, _memory_filters(request))
        return Response(
            paginate(
                request,
                heads,
                key="item_id",
                represent=lambda version: memory_representation(version, principal),
            )
        )

    @extend_schema(
        request=ProposalInput,
        responses={201: MemoryOut},
        operation_id="memory_propose",
        examples=REQUEST_EXAMPLES["memory_propose"],
    )
    def post(self, request: Request) -> Response:
        answer = answers.memory_proposed(self.principal(), request.data)
        return _answer_response(answer, status.HTTP_201_CREATED)


class MemoryDetailView(MemgovAPIView):
    @extend_schema(responses={200: MemoryOut}, operation_id="memory_get")
    def get(self, request: Request, memory_id: str) -> Response:
        return _answer_response(answers.memory_head_answer(self.principal(), memory_id))


class MemoryVersionsView(MemgovAPIView):
    @extend_schema(responses={200: MemoryOut(many=True)}, operation_id="memory_versions")
    def get(self, request: Request, memory_id: str) -> Response:
        principal = self.principal()
        item = selectors.access_memory(principal, memory_id)
        versions = selectors.memory_versions(item)
        return Response([memory_representation(v, principal) for v in versions])

    @extend_schema(
        request=CorrectionInput,
        responses={201: MemoryOut},
        operation_id="memory_correct",
        examples=REQUEST_EXAMPLES["memory_correct"],
        parameters=[
            OpenApiParameter(
                "If-Match",
                str,
                OpenApiParameter.HEADER,
                required=True,
                pattern=IF_MATCH_PATTERN,
                description='The head version read, "<version>"; another is a 409.',
            )
        ],
    )
    def post(self, request: Request, memory_id: str) -> Response:
        answer = answers.memory_corrected(
            self.principal(), memory_id, request.headers.get("If-Match"), request.data
        )
        return _answer_response(answer, status.HTTP_201_CREATED)


class MemoryVersionDetailView(MemgovAPIView):
    @extend_schema(responses={200: MemoryOut}, operation_id="memory_version_get")
    def get(self, request: Request, memory_id: str, number: int) -> Response:
        principal = self.principal()
        item = selectors.access_memory(principal, memory_id)
        version = selectors.memory_version(item, number)
        return Response(
            memory_representation(version, principal), headers={"ETag": f'"{version.number}"'}
        )
