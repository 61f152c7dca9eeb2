"""The memory browser and "time travel": what resolve would have answered, and why."""

from __future__ import annotations

import json
from typing import Any

from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_GET

from core.authority import Authority
from core.errors import NotFound
from core.principals import Principal
from dashboard.access import dashboard_view, page_context
from dashboard.forms import BrowseForm, TimeTravelForm
from memory.catalog import advisory_words
from memory.models import Entity, MemoryVersion
from memory.representations import checks_summary
from memory.resolution import ResolveRequest, decide, resolution_body
from memory.selectors import MemoryFilters, access_entity, memory_heads, versions_with_details

PAGE_SIZE = 50
SCAN_LIMIT = 2000
ENTITY_CHOICES = 500


def entity_choices(principal: Principal) -> list[Entity]:
    return list(Entity.objects.filter(tenant=principal.tenant).order_by("name")[:ENTITY_CHOICES])


def browse_rows(principal: Principal, form: BrowseForm) -> list[MemoryVersion]:
    data = form.cleaned_data if form.is_valid() else {}
    heads = memory_heads(
        principal,
        MemoryFilters(
            subject=data.get("subject") or None,
            kind=data.get("kind") or None,
            status=data.get("status") or None,
            owner=data.get("owner") or None,
            scope=data.get("scope") or None,
        ),
    )
    if data.get("q"):
        heads = heads.filter(Q(statement__icontains=data["q"]) | Q(field__icontains=data["q"]))
    oversight = Authority.load(principal)
    # Details (approvals, checks) are loaded for the shown page only, not for every row.
    rows = heads.prefetch_related(None).order_by("-recorded_at", "item_id")[:SCAN_LIMIT]
    return [v for v in rows if oversight.sees(v)]


def openable_counts(principal: Principal, entity_ids: list[str]) -> dict[str, int]:
    """Per entity, the memories this person may open: the heads Browse would list for
    it (``Authority.sees``), so a count never promises what Browse then hides."""
    oversight = Authority.load(principal)
    heads = memory_heads(principal, MemoryFilters()).filter(subject_id__in=entity_ids)
    counts: dict[str, int] = dict.fromkeys(entity_ids, 0)
    for version in heads.prefetch_related(None):
        if oversight.sees(version):
            counts[str(version.subject_id)] += 1
    return counts


def with_details(versions: list[MemoryVersion]) -> list[MemoryVersion]:
    found = versions_with_details(
        MemoryVersion.objects.filter(pk__in=[v.pk for v in versions]).select_related("subject")
    ).in_bulk()
    return [found[v.pk] for v in versions]


def linkable(principal: Principal, body: dict[str, Any]) -> set[str]:
    """Memory ids in the answer whose page this person may open."""
    ids = {row["memory_id"] for row in body.get("considered", [])}
    ids |= {row["memory_id"] for row in body["facts"] + body["plans"]}
    oversight = Authority.load(principal)
    versions = MemoryVersion.objects.filter(item_id__in=ids).select_related("item")
    return {v.item_id for v in versions if v.number == v.item.head_version and oversight.sees(v)}


def name_considered(principal: Principal, body: dict[str, Any], openable: set[str]) -> None:
    """Give each considered row the statement of its version, for a memory this person may
    open and a version they may see: a row reads as what it says, not as its id."""
    rows = [row for row in body.get("considered", []) if row["memory_id"] in openable]
    wanted = {(row["memory_id"], row["version"]) for row in rows}
    oversight = Authority.load(principal)
    said = {
        (v.item_id, v.number): v.statement
        for v in MemoryVersion.objects.filter(
            tenant=principal.tenant, item_id__in={m for m, _ in wanted}
        )
        if (v.item_id, v.number) in wanted and oversight.sees(v)
    }
    for row in rows:
        row["statement"] = said.get((row["memory_id"], row["version"]), "")


def time_travel(principal: Principal, form: TimeTravelForm) -> dict[str, Any] | None:
    """The resolver's answer for the chosen subject, context and both times (explained)."""
    if not form.is_valid():
        return None
    data = form.cleaned_data
    try:
        subject = access_entity(principal, data["tt_subject"])
    except NotFound as exc:
        form.add_error("tt_subject", exc.detail)
        return None
    request = ResolveRequest(
        subject=subject.pk,
        context=data["tt_context"] or {},
        fields=None,
        valid_at=data["tt_valid_at"],
        known_at=data["tt_known_at"],
        task_id=None,
        explain=True,
    )
    body = resolution_body(decide(principal, request, timezone.now()), explain=True)
    for row in body["facts"] + body["plans"]:
        value = row["value"]
        row["value_text"] = value if isinstance(value, str) else json.dumps(value)
        system = row.get("authoritative_system")
        row["advisory_words"] = advisory_words(system["name"]) if system else ""
        start = row.get("valid_from")
        row["valid_from_at"] = parse_datetime(start) if isinstance(start, str) else None
    openable = linkable(principal, body)
    name_considered(principal, body, openable)
    return {
        "subject": subject,
        "body": body,
        "linkable": openable,
        # The body's times are the API's ISO strings; the page shows them in the tenant's zone.
        "valid_at": parse_datetime(body["valid_at"]) if body.get("valid_at") else None,
        "known_at": parse_datetime(body["known_at"]) if body.get("known_at") else None,
    }


@require_GET
@dashboard_view
def browse_page(request: HttpRequest, principal: Principal) -> HttpResponse:
    form = BrowseForm(request.GET or None)
    travel_form = TimeTravelForm(request.GET if "tt_subject" in request.GET else None)
    answer = time_travel(principal, travel_form) if travel_form.is_bound else None
    rows = browse_rows(principal, form if form.is_bound else BrowseForm({}))
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    entities = entity_choices(principal)
    status = 200
    if travel_form.is_bound and answer is None:
        status = 404 if "tt_subject" in travel_form.errors else 422
    elif form.is_bound and not form.is_valid():
        status = 422
    return render(
        request,
        "dashboard/browse.html",
        page_context(
            principal,
            form=form if form.is_bound else BrowseForm(),
            travel_form=travel_form,
            answer=answer,
            page=page,
            rows=[(v, checks_summary(v)) for v in with_details(list(page.object_list))],
            query=query.urlencode(),
            entities=entities,
            # Every entity fits in a select; beyond that, a searchable text input.
            entities_complete=len(entities) < ENTITY_CHOICES,
        ),
        status=status,
    )
