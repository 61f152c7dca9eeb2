"""Entities and the queue of unresolved mentions: a reviewer links a held item's mention
to one entity (ambiguous mentions are never merged automatically)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from approvals import services
from core.authority import Authority
from core.errors import DomainError, InvalidContent, NotFound
from core.principals import Principal
from dashboard.access import dashboard_memory, dashboard_view, error_page, page_context
from dashboard.browse import entity_choices, openable_counts
from dashboard.forms import LinkSubjectForm, add_errors, refusal_words
from dashboard.linking import MATCHED_ON, link_confirmation, link_effect, linked_message
from memory.models import Entity, MemoryVersion, Status
from memory.selectors import entity_list, entity_match

ENTITY_PAGE = 200


@dataclass(frozen=True)
class HeldItem:
    version: MemoryVersion
    candidates: list[tuple[Entity, str]]
    form: LinkSubjectForm | None = None  # as posted, when its link was just refused

    @property
    def effect(self) -> str:
        return link_effect(self.version)

    @property
    def confirmation(self) -> str:
        return link_confirmation(self.version)


def held_items(principal: Principal) -> list[HeldItem]:
    """Held heads this reviewer may link, with the entities their mention matches."""
    oversight = Authority.load(principal)
    held = (
        MemoryVersion.objects.filter(tenant=principal.tenant, status=Status.HELD_UNRESOLVED)
        .select_related("item", "owner")
        .order_by("status_changed_at", "pk")
    )
    rows = []
    for version in held:
        if version.number != version.item.head_version or not oversight.sees(version):
            continue
        if version.item.subject_id is not None:
            continue  # it asks which value it means, not who: answered on its own page
        if not oversight.may_review(version):
            continue
        mention = version.item.subject_mention
        matches = entity_match(principal=principal, name=mention, kind=None)
        rows.append(HeldItem(version, [(e, MATCHED_ON.get(how, how)) for e, how in matches]))
    return rows


def _render(
    request: HttpRequest,
    principal: Principal,
    status: int = 200,
    *,
    failed: tuple[str, LinkSubjectForm] | None = None,
) -> HttpResponse:
    """``failed``: the memory whose link was refused and the form as posted, so the page
    shows the refusal beside that memory's field with the chosen entity still chosen."""
    q = request.GET.get("q", "").strip()
    entities = list(entity_list(principal, q).order_by("name", "pk")[:ENTITY_PAGE])
    counts = openable_counts(principal, [e.pk for e in entities])
    for entity in entities:
        entity.memories = counts[entity.pk]  # type: ignore[attr-defined]
    return render(
        request,
        "dashboard/entities.html",
        page_context(
            principal,
            held=[
                replace(row, form=failed[1]) if failed and row.version.item_id == failed[0] else row
                for row in held_items(principal)
            ],
            entities=entities,
            all_entities=entity_choices(principal),
            q=q,
            link_form=LinkSubjectForm(),
        ),
        status=status,
    )


@require_GET
@dashboard_view
def entities_page(request: HttpRequest, principal: Principal) -> HttpResponse:
    return _render(request, principal)


@require_POST
@dashboard_view
def link_subject(request: HttpRequest, principal: Principal, memory_id: str) -> HttpResponse:
    item, _ = dashboard_memory(principal, Authority.load(principal), memory_id)
    form = LinkSubjectForm(request.POST)
    if not form.is_valid():
        return _render(request, principal, status=422, failed=(memory_id, form))
    try:
        version = services.memory_link_subject(
            principal=principal, item=item, subject_id=form.cleaned_data["subject"]
        )
    except NotFound as exc:
        return error_page(request, exc)
    except InvalidContent as exc:
        add_errors(form, exc)
        return _render(request, principal, status=exc.status, failed=(memory_id, form))
    except DomainError as exc:
        messages.error(request, refusal_words(exc))
        return _render(request, principal, status=exc.status)
    messages.success(request, f"“{version.statement}”: {linked_message(version)}")
    return redirect(reverse("dashboard:entities"))
