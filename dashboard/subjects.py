"""A subject's page: what is held about it, its export and its erasure (issue 12)."""

from __future__ import annotations

import json
from typing import Any, cast

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from agent_interface.answers import resolved
from core.authority import may_erase, may_export
from core.principals import Principal
from dashboard.access import dashboard_view, page_context
from dashboard.browse import linkable, openable_counts
from dashboard.forms import EraseForm
from dashboard.impact import ABSTAINS
from memory.catalog import advisory_words
from memory.erasure import erasure_start
from memory.export import export_subject
from memory.models import Entity, Erasure
from memory.selectors import access_entity, access_erasure

POLL_SECONDS = 2


def told_now(principal: Principal, entity: Entity) -> list[dict[str, Any]]:
    """Per field, what an agent asking about the entity with no context is told now: the
    contract's resolve answer (cached, as agents get it), never recomputed here. It is
    asked as the viewer, so it holds only what the viewer may see."""
    if entity.erased_at is not None:
        return []
    body = resolved(principal, {"subject": entity.pk})
    openable = linkable(principal, body)
    rows = [
        {
            "field": f["field"],
            "value": f["value"] if isinstance(f["value"], str) else json.dumps(f["value"]),
            "statement": f["statement"],
            "memory_id": f["memory_id"],
            "kind": f["kind"],
            "openable": f["memory_id"] in openable,
            # A field another system holds is memory only (issue 43, point 11).
            "advisory": (
                advisory_words(f["authoritative_system"]["name"]) if f.get("advisory") else ""
            ),
        }
        for f in body["facts"]
    ]
    rows += [
        {"field": a["field"], "abstains": ABSTAINS.get(a["reason"], a["reason"])}
        for a in body["abstentions"]
    ]
    return sorted(rows, key=lambda row: row["field"])


def _render(
    request: HttpRequest,
    principal: Principal,
    entity: Entity,
    *,
    status: int = 200,
    form: EraseForm | None = None,
) -> HttpResponse:
    return render(
        request,
        "dashboard/subject.html",
        page_context(
            principal,
            entity=entity,
            aliases=list(entity.aliases.all()),
            memories=openable_counts(principal, [entity.pk])[entity.pk],
            told=told_now(principal, entity),
            erasures=Erasure.objects.filter(subject=entity).order_by("-started_at"),
            can_export=may_export(principal),
            can_erase=may_erase(principal),
            erase_form=form or EraseForm(),
            poll_seconds=POLL_SECONDS,
        ),
        status=status,
    )


@require_GET
@dashboard_view
def subject_page(request: HttpRequest, principal: Principal, entity_id: str) -> HttpResponse:
    return _render(request, principal, access_entity(principal, entity_id))


@require_GET
@dashboard_view
def subject_export(request: HttpRequest, principal: Principal, entity_id: str) -> HttpResponse:
    response = StreamingHttpResponse(
        export_subject(principal, entity_id), content_type="application/json"
    )
    response["Content-Disposition"] = f'attachment; filename="{entity_id}.json"'
    # A streamed document is an HttpResponseBase like the pages; the wrapper only passes it on.
    return cast(HttpResponse, response)


@require_POST
@dashboard_view
def subject_erase(request: HttpRequest, principal: Principal, entity_id: str) -> HttpResponse:
    entity = access_entity(principal, entity_id)
    form = EraseForm(request.POST)
    if not form.is_valid() or form.cleaned_data["confirm"] != entity.pk:
        if form.is_valid():
            form.add_error("confirm", "Type the subject's id exactly, to confirm.")
        messages.error(request, "Nothing was erased: confirm with the id and give a reason.")
        return _render(request, principal, entity, status=422, form=form)
    erasure = erasure_start(
        principal=principal, subject_id=entity.pk, reason=form.cleaned_data["reason"]
    )
    messages.success(request, f"Erasure {erasure.pk} started; its items are already retired.")
    return redirect(reverse("dashboard:subject", args=[entity.pk]))


@require_GET
@dashboard_view
def erasure_progress(request: HttpRequest, principal: Principal, erasure_id: str) -> HttpResponse:
    """The polled progress of one erasure (also its page, linked from the email)."""
    job = access_erasure(principal, erasure_id)
    fragment = request.headers.get("HX-Request") == "true"
    return render(
        request,
        "dashboard/_erasure.html" if fragment else "dashboard/erasure.html",
        page_context(principal, job=job, poll_seconds=POLL_SECONDS),
    )
