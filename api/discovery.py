"""REST endpoints of the agents' read side (docs/api.md, Search and Agent reads): thin over
``agent_interface.discovery``, which the MCP tools call too."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from agent_interface import discovery
from api.base import MemgovAPIView
from api.openapi import (
    EntityKindsOut,
    ExternalRefMatchOut,
    FactPageOut,
    ProposalPageOut,
    SearchPageOut,
)
from core.errors import InvalidContent
from core.inputs import strict_int


def _params(request: Request) -> dict[str, Any]:
    """Query parameters as an input object; ``limit`` is a number there."""
    data: dict[str, Any] = dict(request.query_params.items())
    if "limit" in data:
        limit = strict_int(data["limit"], max_digits=3)
        if limit is None:
            raise InvalidContent({"limit": ["must be an integer"]})
        data["limit"] = limit
    return data


def _page_response(request: Request, page: discovery.Page) -> Response:
    next_url = None
    if page.next_cursor is not None:
        next_url = replace_query_param(request.build_absolute_uri(), "cursor", page.next_cursor)
    body: dict[str, Any] = {"results": page.results, "next": next_url}
    if page.match is not None:
        body["match"] = page.match  # search: whether the candidates have every word
    return Response(body)


class SearchView(MemgovAPIView):
    query_parameters = ("q", "subject", "kind", "status", "limit", "cursor")

    @extend_schema(
        parameters=[discovery.SearchInput],
        responses={200: SearchPageOut},
        operation_id="search",
    )
    def get(self, request: Request) -> Response:
        """Candidates (entities, facts, sources) for a text; resolve before using a fact."""
        return _page_response(request, discovery.searched(self.principal(), _params(request)))


class EntityFactsView(MemgovAPIView):
    query_parameters = ("limit", "cursor")

    @extend_schema(
        parameters=[discovery.PageQuery],
        responses={200: FactPageOut},
        operation_id="entity_facts",
    )
    def get(self, request: Request, entity_id: str) -> Response:
        """Each fact whose subject is the entity or whose value references it, once."""
        data = {**_params(request), "entity_id": entity_id}
        return _page_response(request, discovery.entity_facts(self.principal(), data))


class ProposalsView(MemgovAPIView):
    query_parameters = ("status", "limit", "cursor")

    @extend_schema(
        parameters=[discovery.ProposalsInput],
        responses={200: ProposalPageOut},
        operation_id="proposal_list_mine",
    )
    def get(self, request: Request) -> Response:
        """The caller's own proposals, oldest first, with why each is where it is."""
        return _page_response(request, discovery.my_proposals(self.principal(), _params(request)))


class EntityKindsView(MemgovAPIView):
    @extend_schema(responses={200: EntityKindsOut}, operation_id="entity_kinds")
    def get(self, request: Request) -> Response:
        return Response(discovery.entity_kinds(self.principal()))


class EntityByRefView(MemgovAPIView):
    query_parameters = ("external_ref", "kind")

    @extend_schema(
        parameters=[discovery.ExternalRefInput],
        responses={200: ExternalRefMatchOut},
        operation_id="entity_match_external_ref",
    )
    def get(self, request: Request) -> Response:
        """``matched`` when exactly one entity carries this id of another system."""
        return Response(discovery.external_ref_matched(self.principal(), _params(request)))
